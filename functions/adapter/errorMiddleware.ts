/**
 * What escapes the core handler (it turns its own errors into responses) is a failure to start:
 * a configuration error, an unreachable store at cold start. It becomes the same plain 500 with a
 * request id as any other unexpected error (lib/http/errorResponse.ts), never a Lambda error that
 * API Gateway would answer with its own 502.
 */
import type { MiddlewareObj } from '@middy/core';
import type { APIGatewayProxyEvent } from 'aws-lambda';
import { errorResponse } from '../../lib/http/errorResponse.js';
import type { CoreResponse } from '../../lib/http/types.js';
import type { Logger } from '../../lib/log.js';

export function errorAsResponse<TResult>(
  logger: Logger,
  convert: (response: CoreResponse, event: APIGatewayProxyEvent) => TResult | Promise<TResult>,
): MiddlewareObj<APIGatewayProxyEvent, TResult> {
  return {
    onError: async (request) => {
      const requestId = request.event.requestContext?.requestId ?? 'unknown';
      request.response = await convert(errorResponse(request.error, requestId, logger), request.event);
    },
  };
}
