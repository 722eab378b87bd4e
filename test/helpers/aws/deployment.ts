/**
 * What the deployment (serverless.yml) configures in API Gateway, as the stand-in applies it:
 * the git API's REQUEST authorizer and its gateway responses. template.test.ts checks that the
 * packaged template says exactly this, so the stand-in runs the deployment's settings.
 */
import type { GatewayResponseConfig, GatewayResponseType } from './gatewayAuthorizer.js';

/**
 * No identity source and no caching: anonymous requests must reach the authorizer (a public
 * repository is readable without a token), and API Gateway answers a request that lacks an
 * identity source with 401 without asking the authorizer.
 */
export const DEPLOYED_AUTHORIZER = { identitySources: [] as string[], resultTtlSeconds: 0 };

export const DEPLOYED_GATEWAY_RESPONSES: Partial<Record<GatewayResponseType, GatewayResponseConfig>> = {
  UNAUTHORIZED: {
    StatusCode: '401',
    ResponseParameters: {
      'gatewayresponse.header.WWW-Authenticate': `'Basic realm="narwal", charset="UTF-8"'`,
      'gatewayresponse.header.Content-Type': `'text/plain; charset=utf-8'`,
    },
    ResponseTemplates: {
      'application/json': 'narwal: authentication required (any user name, a narwal token as the password)\n',
    },
  },
};
