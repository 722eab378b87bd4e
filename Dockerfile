# The one image narwal runs on AWS: every Lambda function (each picks its handler with the
# function's image command) and the pool (`node /var/task/narwal.mjs serve`, see deploy/pool/).
# Build and push it with `npm run image -- REPOSITORY[:TAG]` (scripts/image.mjs): one platform,
# no attestations, so the pushed digest names a single image manifest, which Lambda requires.
FROM public.ecr.aws/lambda/nodejs:20

# narwal runs the real git (upload-pack, receive-pack, index-pack, repack) for every transfer.
# git-core is git without its Perl and Python tools, none of which narwal uses.
RUN dnf install -y git-core && dnf clean all && git --version

COPY dist/lambda/ ${LAMBDA_TASK_ROOT}/

CMD ["git.handler"]
