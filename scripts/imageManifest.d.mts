/** See imageManifest.mjs. */
export function lambdaManifestProblem(raw: string): string | null;
