/**
 * API Gateway's Lambda REQUEST authorizer and the gateway responses it leads to, as AWS documents
 * them for REST APIs:
 * - Identity sources: when any is missing or empty, API Gateway answers 401 UNAUTHORIZED without
 *   invoking the authorizer; they are required when results are cached and make the cache key.
 *   https://docs.aws.amazon.com/apigateway/latest/api/API_CreateAuthorizer.html (identitySource)
 * - The result is cached for `authorizerResultTtlInSeconds` (0 = off, at most 3600) and the cached
 *   policy is applied to every later request with the same identity, on any path: a policy that
 *   names only the first request's method ARN refuses the others with 403.
 *   https://repost.aws/knowledge-center/api-gateway-lambda-authorization-errors
 * - The function throwing `Unauthorized` gives 401 UNAUTHORIZED; a policy that does not allow the
 *   method ARN (or denies it) gives 403 ACCESS_DENIED; any other error AUTHORIZER_FAILURE (500); an
 *   answer that is not a policy, or a context value that is an object or a list,
 *   AUTHORIZER_CONFIGURATION_ERROR (500).
 *   https://docs.aws.amazon.com/apigateway/latest/developerguide/api-gateway-lambda-authorizer-output.html
 *   https://docs.aws.amazon.com/apigateway/latest/developerguide/supported-gateway-response-types.html
 * - Gateway responses may set headers, static values in single quotes.
 *   https://docs.aws.amazon.com/AWSCloudFormation/latest/UserGuide/aws-resource-apigateway-gatewayresponse.html
 * - The authorizer's `context` (values stringified) and `principalId` reach a Lambda proxy
 *   integration as `event.requestContext.authorizer`. The request body is never passed to it.
 */
import type {
  APIGatewayAuthorizerResult,
  APIGatewayRequestAuthorizerEvent,
  Context,
  PolicyDocument,
  Statement,
} from 'aws-lambda';

export type GatewayResponseType =
  | 'UNAUTHORIZED'
  | 'ACCESS_DENIED'
  | 'AUTHORIZER_FAILURE'
  | 'AUTHORIZER_CONFIGURATION_ERROR'
  | 'MISSING_AUTHENTICATION_TOKEN'
  | 'REQUEST_TOO_LARGE'
  | 'INTEGRATION_TIMEOUT'
  | 'INTEGRATION_FAILURE';

/** The default status and message of each gateway response type. */
export const GATEWAY_RESPONSE_DEFAULTS: Record<GatewayResponseType, { status: number; message: string }> = {
  UNAUTHORIZED: { status: 401, message: 'Unauthorized' },
  ACCESS_DENIED: { status: 403, message: 'User is not authorized to access this resource' },
  AUTHORIZER_FAILURE: { status: 500, message: 'Internal server error' },
  AUTHORIZER_CONFIGURATION_ERROR: { status: 500, message: 'Internal server error' },
  MISSING_AUTHENTICATION_TOKEN: { status: 403, message: 'Missing Authentication Token' },
  REQUEST_TOO_LARGE: { status: 413, message: 'Request Too Long' },
  INTEGRATION_TIMEOUT: { status: 504, message: 'Endpoint request timed out' },
  INTEGRATION_FAILURE: { status: 502, message: 'Internal server error' },
};

/** A gateway response as CloudFormation declares it (AWS::ApiGateway::GatewayResponse). */
export interface GatewayResponseConfig {
  readonly StatusCode?: string;
  /** `gatewayresponse.header.<Name>`: `'<static value>'`. */
  readonly ResponseParameters?: Record<string, string>;
  /** By content type; "The templates are not processed by the VTL engine" for static text. */
  readonly ResponseTemplates?: Record<string, string>;
}

export type AuthorizerHandler = (
  event: APIGatewayRequestAuthorizerEvent,
  context: Context,
) => Promise<APIGatewayAuthorizerResult>;

export interface AuthorizerConfig {
  readonly invoke: (event: APIGatewayRequestAuthorizerEvent) => Promise<APIGatewayAuthorizerResult>;
  /** e.g. `method.request.header.Authorization`; required when results are cached. */
  readonly identitySources: readonly string[];
  readonly resultTtlSeconds: number;
}

export interface AuthorizerRequest {
  readonly method: string;
  /** Without the stage. */
  readonly path: string;
  readonly stage: string;
  readonly headers: Record<string, string>;
  readonly multiValueHeaders: Record<string, string[]>;
  readonly query: Record<string, string> | null;
  readonly multiValueQuery: Record<string, string[]> | null;
  readonly requestContext: APIGatewayRequestAuthorizerEvent['requestContext'];
}

export type AuthorizerOutcome =
  | { readonly kind: 'allow'; readonly authorizer: Record<string, string> }
  | { readonly kind: 'refuse'; readonly response: GatewayResponseType; readonly reason: string };

const API_ARN = 'arn:aws:execute-api:us-east-1:000000000000:local';

export class GatewayAuthorizer {
  readonly #cache = new Map<string, { result: APIGatewayAuthorizerResult; until: number }>();
  /** Times the authorizer function ran (cache misses). */
  invocations = 0;

  constructor(private readonly config: AuthorizerConfig) {
    if (config.resultTtlSeconds < 0 || config.resultTtlSeconds > 3600)
      throw new Error('authorizerResultTtlInSeconds is 0 to 3600');
    if (config.resultTtlSeconds > 0 && config.identitySources.length === 0)
      throw new Error('a cached REQUEST authorizer needs identity sources');
  }

  async decide(request: AuthorizerRequest): Promise<AuthorizerOutcome> {
    const identity = this.config.identitySources.map((source) => identityValue(source, request));
    if (identity.some((value) => value === undefined || value === ''))
      return { kind: 'refuse', response: 'UNAUTHORIZED', reason: 'identity source missing' };
    const methodArn = `${API_ARN}/${request.stage}/${request.method}${request.path}`;
    const key = JSON.stringify(identity);
    let result = this.config.resultTtlSeconds > 0 ? this.#cached(key) : undefined;
    if (result === undefined) {
      this.invocations++;
      try {
        result = await this.config.invoke(this.#event(request, methodArn));
      } catch (error) {
        if (error instanceof Error && error.message === 'Unauthorized')
          return { kind: 'refuse', response: 'UNAUTHORIZED', reason: 'authorizer: Unauthorized' };
        return {
          kind: 'refuse',
          response: 'AUTHORIZER_FAILURE',
          reason: `authorizer failed: ${String(error)}`,
        };
      }
      const invalid = invalidResult(result);
      if (invalid) return { kind: 'refuse', response: 'AUTHORIZER_CONFIGURATION_ERROR', reason: invalid };
      if (this.config.resultTtlSeconds > 0)
        this.#cache.set(key, { result, until: Date.now() + this.config.resultTtlSeconds * 1000 });
    }
    if (!allows(result.policyDocument, methodArn))
      return { kind: 'refuse', response: 'ACCESS_DENIED', reason: `policy does not allow ${methodArn}` };
    const authorizer: Record<string, string> = { principalId: result.principalId };
    for (const [name, value] of Object.entries(result.context ?? {})) authorizer[name] = String(value);
    return { kind: 'allow', authorizer };
  }

  #cached(key: string): APIGatewayAuthorizerResult | undefined {
    const hit = this.#cache.get(key);
    if (hit && hit.until > Date.now()) return hit.result;
    this.#cache.delete(key);
    return undefined;
  }

  #event(request: AuthorizerRequest, methodArn: string): APIGatewayRequestAuthorizerEvent {
    return {
      type: 'REQUEST',
      methodArn,
      resource: '/{proxy+}',
      path: request.path,
      httpMethod: request.method,
      headers: request.headers,
      multiValueHeaders: request.multiValueHeaders,
      pathParameters: request.path === '/' ? null : { proxy: request.path.slice(1) },
      queryStringParameters: request.query,
      multiValueQueryStringParameters: request.multiValueQuery,
      stageVariables: null,
      requestContext: request.requestContext,
    };
  }
}

function identityValue(source: string, request: AuthorizerRequest): string | undefined {
  const header = /^method\.request\.header\.(.+)$/.exec(source)?.[1];
  if (header !== undefined) {
    const found = Object.keys(request.headers).find((n) => n.toLowerCase() === header.toLowerCase());
    return found === undefined ? undefined : request.headers[found];
  }
  const query = /^method\.request\.querystring\.(.+)$/.exec(source)?.[1];
  if (query !== undefined) return request.query?.[query];
  throw new Error(`identity source not modelled: ${source}`);
}

function invalidResult(result: unknown): string | undefined {
  const r = result as Partial<APIGatewayAuthorizerResult> | null;
  if (r === null || typeof r !== 'object') return 'authorizer returned no policy';
  if (typeof r.principalId !== 'string') return 'authorizer returned no principalId';
  if (!r.policyDocument || !Array.isArray(r.policyDocument.Statement)) return 'authorizer returned no policy';
  for (const [name, value] of Object.entries(r.context ?? {}))
    if (typeof value === 'object' && value !== null)
      return `authorizer context ${name} is an object or a list, which API Gateway refuses`;
  return undefined;
}

/** IAM evaluation of the statements for `execute-api:Invoke`: an explicit Deny wins, then Allow. */
function allows(policy: PolicyDocument, methodArn: string): boolean {
  const matching = (effect: string) =>
    policy.Statement.some(
      (statement: Statement) =>
        statement.Effect === effect &&
        actionsOf(statement).some((a) => a === 'execute-api:Invoke' || a === 'execute-api:*' || a === '*') &&
        resourcesOf(statement).some((resource) => globMatches(resource, methodArn)),
    );
  return !matching('Deny') && matching('Allow');
}

function actionsOf(statement: Statement): string[] {
  const action = (statement as { Action?: string | string[] }).Action;
  return action === undefined ? [] : [action].flat();
}

function resourcesOf(statement: Statement): string[] {
  const resource = (statement as { Resource?: string | string[] }).Resource;
  return resource === undefined ? [] : [resource].flat();
}

/** IAM resource matching: `*` any run of characters, `?` one. */
function globMatches(pattern: string, value: string): boolean {
  const regex = pattern
    .replace(/[.+^${}()|[\]\\]/g, '\\$&')
    .replace(/\*/g, '.*')
    .replace(/\?/g, '.');
  return new RegExp(`^${regex}$`).test(value);
}

/** A gateway response's body: its `application/json` template (static text only), or the default. */
export function gatewayResponseBody(config: GatewayResponseConfig | undefined, message: string): string {
  const template = config?.ResponseTemplates?.['application/json'];
  if (template === undefined) return JSON.stringify({ message });
  if (template.includes('$')) throw new Error(`gateway response template not modelled: ${template}`);
  return template;
}

/** A gateway response's headers: only static values ('...') are modelled. */
export function gatewayResponseHeaders(config: GatewayResponseConfig | undefined): Record<string, string> {
  const headers: Record<string, string> = {};
  for (const [key, value] of Object.entries(config?.ResponseParameters ?? {})) {
    const name = /^gatewayresponse\.header\.(.+)$/.exec(key)?.[1];
    const literal = /^'(.*)'$/s.exec(value)?.[1];
    if (name === undefined || literal === undefined)
      throw new Error(`gateway response parameter not modelled: ${key} = ${value}`);
    headers[name] = literal;
  }
  return headers;
}
