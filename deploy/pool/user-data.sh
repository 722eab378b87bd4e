#!/bin/bash
# User data of a pool instance (Amazon Linux 2023). The template passes it through Fn::Sub, which
# fills in the resource names and puts the systemd unit (deploy/pool/narwal-pool.service) where
# the Unit variable is; bash variables here are therefore written without braces.
set -euo pipefail
dnf install -y docker amazon-efs-utils aws-cfn-bootstrap
# The stack waits for this instance's signal (the Auto Scaling group's CreationPolicy and
# UpdatePolicy): success once narwal answers /healthz, failure if anything here fails first.
signal() {
  /opt/aws/bin/cfn-signal -e "$1" --stack ${AWS::StackName} --resource PoolAutoScalingGroup --region ${AWS::Region}
}
trap 'signal 1' ERR
systemctl enable --now docker

# The shared cache, through the same access point (and so as the same POSIX user) as the functions.
mkdir -p /mnt/narwal
echo "${FileSystemId}:/ /mnt/narwal efs _netdev,tls,iam,accesspoint=${AccessPointId} 0 0" >> /etc/fstab
mount /mnt/narwal

# The image every function runs, from the deployment's ECR repository.
aws ecr get-login-password --region ${AWS::Region} \
  | docker login --username AWS --password-stdin ${RegistryHost}
docker pull ${ImageUri}

mkdir -p /etc/narwal
umask 077
cat > /etc/narwal/pool.env <<ENV
NARWAL_IMAGE=${ImageUri}
NARWAL_UID=${PosixUid}
NARWAL_GID=${PosixGid}
ENV
# Secrets by their ids only: narwal reads them at run time and follows their rotation.
cat > /etc/narwal/narwal.env <<ENV
NARWAL_STORE=s3
NARWAL_S3_BUCKET=${LogBucket}
AWS_REGION=${AWS::Region}
NARWAL_PRESENCE=dynamodb
NARWAL_PRESENCE_TABLE=${PresenceTable}
NARWAL_DATA=/tmp/narwal
NARWAL_CACHE_DIR=/mnt/narwal/cache
NARWAL_PUBLIC_URL=${PoolUrl}
NARWAL_ADMIN_TOKEN_SECRET_ID=${AdminTokenSecret}
ENV
# Push events, as the functions send them (empty values: not configured).
if [ -n "${EventBus}" ] && [ "${EventBus}" != none ]; then
  echo "NARWAL_EVENTBRIDGE_BUS=${EventBus}" >> /etc/narwal/narwal.env
fi
if [ -n "${WebhookUrl}" ]; then
  printf 'NARWAL_WEBHOOK_URL=%s\nNARWAL_WEBHOOK_SECRET_ID=%s\n' "${WebhookUrl}" "${WebhookSecretArn}" >> /etc/narwal/narwal.env
fi

cat > /etc/systemd/system/narwal-pool.service <<'UNIT'
${Unit}
UNIT
systemctl daemon-reload
systemctl enable --now narwal-pool

# /healthz answers 200 once the store, the presence table and the shared cache all answer.
for attempt in $(seq 1 120); do
  if curl -fsS --max-time 5 http://127.0.0.1:8080/healthz > /dev/null; then
    signal 0
    exit 0
  fi
  sleep 5
done
signal 1
