/**
 * The check `npm run image` makes of what it pushed: Lambda takes a single image manifest, and
 * refuses the index docker buildx pushes when it adds its attestations.
 */
import { describe, expect, it } from 'vitest';
import { lambdaManifestProblem } from '../../../scripts/imageManifest.mjs';

const manifest = (mediaType: string) =>
  JSON.stringify({ schemaVersion: 2, mediaType, config: { digest: 'sha256:a' }, layers: [] });

describe('lambdaManifestProblem', () => {
  it('accepts a Docker v2 or OCI image manifest', () => {
    expect(
      lambdaManifestProblem(manifest('application/vnd.docker.distribution.manifest.v2+json')),
    ).toBeNull();
    expect(lambdaManifestProblem(manifest('application/vnd.oci.image.manifest.v1+json'))).toBeNull();
  });

  it('refuses the index a build with provenance attestations pushes, and says how to build instead', () => {
    const index = JSON.stringify({
      schemaVersion: 2,
      mediaType: 'application/vnd.oci.image.index.v1+json',
      manifests: [
        { digest: 'sha256:1', platform: { architecture: 'amd64', os: 'linux' } },
        {
          digest: 'sha256:2',
          platform: { architecture: 'unknown', os: 'unknown' },
          annotations: { 'vnd.docker.reference.type': 'attestation-manifest' },
        },
      ],
    });
    expect(lambdaManifestProblem(index)).toBe(
      'the digest names an index of 2 manifests (amd64, attestation-manifest); Lambda needs a single image manifest: build with --provenance=false --sbom=false',
    );
  });

  it('refuses what is not a manifest at all', () => {
    expect(lambdaManifestProblem('<html>')).toBe(
      'the registry answered something that is not a JSON manifest',
    );
  });
});
