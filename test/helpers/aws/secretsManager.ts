/**
 * A local stand-in for AWS Secrets Manager's GetSecretValue, on its real wire protocol (JSON 1.1:
 * `POST /` with `X-Amz-Target: secretsmanager.GetSecretValue` and a SigV4-signed request), so
 * the real SDK client is tested end to end. Secrets Manager itself cannot run here. As strict as
 * the service where narwal depends on it: an unsigned request is refused, an unknown secret is
 * ResourceNotFoundException (400), and each read returns the AWSCURRENT version of that moment.
 * https://docs.aws.amazon.com/secretsmanager/latest/apireference/API_GetSecretValue.html
 */
import { createServer, type Server } from 'node:http';

export interface SecretsManagerStandIn {
  readonly endpoint: string;
  /** Sets (or rotates) a secret's current value. */
  put(secretId: string, value: string): void;
  /** GetSecretValue calls answered so far. */
  readonly reads: string[];
  stop(): Promise<void>;
}

export async function startSecretsManager(): Promise<SecretsManagerStandIn> {
  const secrets = new Map<string, string>();
  const reads: string[] = [];
  const server: Server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const answer = (status: number, body: unknown, type?: string) => {
        res.writeHead(status, {
          'content-type': 'application/x-amz-json-1.1',
          ...(type ? { 'x-amzn-errortype': type } : {}),
        });
        res.end(JSON.stringify(body));
      };
      if (!/^AWS4-HMAC-SHA256 Credential=/.test(req.headers.authorization ?? ''))
        return answer(
          400,
          { __type: 'MissingAuthenticationTokenException' },
          'MissingAuthenticationTokenException',
        );
      if (req.headers['x-amz-target'] !== 'secretsmanager.GetSecretValue')
        return answer(400, { __type: 'UnknownOperationException' }, 'UnknownOperationException');
      const { SecretId } = JSON.parse(Buffer.concat(chunks).toString() || '{}') as { SecretId?: string };
      const value = SecretId === undefined ? undefined : secrets.get(SecretId);
      if (SecretId === undefined || value === undefined)
        return answer(
          400,
          {
            __type: 'ResourceNotFoundException',
            Message: "Secrets Manager can't find the specified secret.",
          },
          'ResourceNotFoundException',
        );
      reads.push(SecretId);
      answer(200, {
        ARN: `arn:aws:secretsmanager:us-east-1:000000000000:secret:${SecretId}`,
        Name: SecretId,
        SecretString: value,
        VersionStages: ['AWSCURRENT'],
      });
    });
  });
  await new Promise<void>((done) => server.listen(0, '127.0.0.1', done));
  const address = server.address();
  const port = typeof address === 'object' && address ? address.port : 0;
  return {
    endpoint: `http://127.0.0.1:${port}`,
    put: (id, value) => secrets.set(id, value),
    reads,
    async stop() {
      server.closeAllConnections();
      await new Promise<void>((done) => server.close(() => done()));
    },
  };
}
