/**
 * The REQUEST authorizer of the git API (serverless.yml): API Gateway runs it before the git
 * function, and only its refusal can produce a 401 that git understands. A refusal (`Unauthorized`)
 * becomes the UNAUTHORIZED gateway response, whose `WWW-Authenticate: Basic` the template sets; a
 * 401 the function returned itself reaches the client with that header renamed, and git then never
 * sends credentials. https://docs.aws.amazon.com/apigateway/latest/developerguide/apigateway-use-lambda-authorizer.html
 *
 * It refuses exactly what the core handler would answer 401 (lib/http/gatewayAccess.ts) and lets
 * everything else through with a policy for every method and path of the stage, so a result
 * API Gateway caches is valid for the other paths of the same caller too.
 */
import type { APIGatewayAuthorizerResult, APIGatewayRequestAuthorizerEvent } from 'aws-lambda';
import { adminTokenOf } from '../lib/app.js';
import { TokenStore } from '../lib/auth/TokenStore.js';
import { loadConfig } from '../lib/config.js';
import { ChunkedPushNotes } from '../lib/http/chunkedPushes.js';
import { GatewayAccess } from '../lib/http/gatewayAccess.js';
import { createTransferRouter } from '../lib/http/transferRouter.js';
import { jsonLogger } from '../lib/log.js';
import { createPresenceStore } from '../lib/presence/createPresenceStore.js';
import { SecretsManagerClients } from '../lib/secrets/configuredSecret.js';
import { createObjectStore } from '../lib/store/createObjectStore.js';
import { Wal } from '../lib/wal/Wal.js';

export interface AuthorizerContainer {
  access(): Promise<GatewayAccess>;
}

export function authorizerHandler(from: AuthorizerContainer) {
  return async (event: APIGatewayRequestAuthorizerEvent): Promise<APIGatewayAuthorizerResult> => {
    const access = await from.access();
    const decision = await access.decide({
      method: event.httpMethod,
      path: event.path,
      query: queryOf(event),
      headers: headersOf(event),
      requestId: event.requestContext.requestId,
    });
    // The exact message API Gateway turns into 401 UNAUTHORIZED.
    if (!decision.allow) throw new Error('Unauthorized');
    return {
      principalId: decision.principal,
      policyDocument: {
        Version: '2012-10-17',
        Statement: [
          { Action: 'execute-api:Invoke', Effect: 'Allow', Resource: stageWildcard(event.methodArn) },
        ],
      },
    };
  };
}

/** `arn:...:API/STAGE/METHOD/PATH` -> `arn:...:API/STAGE/*`: every method and path of the stage. */
export function stageWildcard(methodArn: string): string {
  const [api, stage] = methodArn.split('/');
  return `${api}/${stage}/*`;
}

/** Lower-case names; repeated headers joined with ", ". */
function headersOf(event: APIGatewayRequestAuthorizerEvent): Record<string, string> {
  const headers: Record<string, string> = {};
  for (const [name, values] of Object.entries(event.multiValueHeaders ?? {}))
    if (values && values.length > 0) headers[name.toLowerCase()] = values.join(', ');
  for (const [name, value] of Object.entries(event.headers ?? {}))
    if (value !== undefined) headers[name.toLowerCase()] ??= value;
  return headers;
}

function queryOf(event: APIGatewayRequestAuthorizerEvent): URLSearchParams {
  const query = new URLSearchParams();
  for (const [name, values] of Object.entries(event.multiValueQueryStringParameters ?? {}))
    for (const value of values ?? []) query.append(name, value);
  if ([...query.keys()].length > 0) return query;
  for (const [name, value] of Object.entries(event.queryStringParameters ?? {}))
    if (value !== undefined) query.append(name, value);
  return query;
}

/** Built once per container from the environment: the store, the log and the token records. */
export function authorizerContainer(env: NodeJS.ProcessEnv = process.env): AuthorizerContainer {
  let access: Promise<GatewayAccess> | undefined;
  return {
    access() {
      access ??= (async () => {
        const config = loadConfig(env);
        const store = await createObjectStore(config);
        const secrets = new SecretsManagerClients({
          region: config.awsRegion,
          endpoint: config.secretsManagerEndpoint,
        });
        const adminToken = await adminTokenOf(config, secrets);
        const tokens = new TokenStore(store, adminToken.secret, { cacheMs: config.tokenCacheMs });
        const wal = new Wal(store);
        const logger = jsonLogger({ quiet: config.quiet, secrets: [adminToken.value] });
        const chunkedPushes =
          config.route?.chunkedPushes === 'pool'
            ? new ChunkedPushNotes({ presence: await createPresenceStore(config), owner: 'authorizer' })
            : undefined;
        const routeTransfer = config.route
          ? createTransferRouter({
              wal,
              logger,
              poolUrl: config.route.poolUrl,
              limits: { maxCloneBytes: config.route.maxCloneBytes, maxPushBytes: config.route.maxPushBytes },
              chunkedPushes,
            })
          : undefined;
        return new GatewayAccess({ tokens, wal, cacheMs: config.tokenCacheMs, routeTransfer });
      })().catch((error: unknown) => {
        access = undefined;
        throw error;
      });
      return access;
    },
  };
}

export const handler = authorizerHandler(authorizerContainer());
