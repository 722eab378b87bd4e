// Lambda runs a container image only from a single-platform image manifest (Docker Image
// Manifest V2 Schema 2, or an OCI image manifest), never from an index: "Lambda does not support
// functions that use multi-architecture container images"
// (https://docs.aws.amazon.com/lambda/latest/dg/images-create.html). docker buildx adds a
// provenance attestation by default, which turns what it pushes into an index even for one
// platform; scripts/image.mjs builds with --provenance=false --sbom=false and checks the result here.

const SINGLE = new Set([
  'application/vnd.docker.distribution.manifest.v2+json',
  'application/vnd.oci.image.manifest.v1+json',
]);

/** Why the raw manifest (as `docker buildx imagetools inspect --raw` prints it) is no Lambda image, or null. */
export function lambdaManifestProblem(raw) {
  let manifest;
  try {
    manifest = JSON.parse(raw);
  } catch {
    return 'the registry answered something that is not a JSON manifest';
  }
  const type = manifest.mediaType ?? (manifest.manifests ? 'an index without a mediaType' : undefined);
  if (SINGLE.has(type)) return null;
  if (Array.isArray(manifest.manifests)) {
    const kinds = manifest.manifests.map(
      (m) => m.annotations?.['vnd.docker.reference.type'] ?? m.platform?.architecture,
    );
    return `the digest names an index of ${manifest.manifests.length} manifests (${kinds.join(', ')}); Lambda needs a single image manifest: build with --provenance=false --sbom=false`;
  }
  return `unknown manifest media type ${JSON.stringify(type)}`;
}
