/**
 * The buffered variant of the git function, for an API without response streaming: the whole
 * response is returned at once, base64-encoded, under Lambda's 6 MB, which NARWAL_ROUTE_CLONE_BYTES
 * must respect (its default does). A response that would not fit is refused with a clear 503,
 * never cut short (adapter/bufferedResult.ts).
 */
import middy from '@middy/core';
import type { APIGatewayProxyEvent, APIGatewayProxyResult } from 'aws-lambda';
import type { CoreHandler } from '../lib/http/types.js';
import type { Logger } from '../lib/log.js';
import { toCoreRequest } from './adapter/apiGatewayRequest.js';
import { toBufferedResult } from './adapter/bufferedResult.js';
import { type Container, container, startInInit } from './adapter/container.js';
import { errorAsResponse } from './adapter/errorMiddleware.js';

export function httpHandler(from: Container) {
  return middy<APIGatewayProxyEvent, APIGatewayProxyResult>(
    async (event: APIGatewayProxyEvent): Promise<APIGatewayProxyResult> => {
      const app = await from.app();
      const poolUrl = app.config.route?.poolUrl;
      return handleEvent(app.handler, event, { logger: from.logger, ...(poolUrl ? { poolUrl } : {}) });
    },
    { requestEnd: () => from.idle() },
  ).use(
    errorAsResponse(from.logger, (response, event) =>
      toBufferedResult(response, {
        requestId: event.requestContext?.requestId ?? 'unknown',
        logger: from.logger,
      }),
    ),
  );
}

export async function handleEvent(
  core: CoreHandler,
  event: APIGatewayProxyEvent,
  options: { logger: Logger; poolUrl?: string },
): Promise<APIGatewayProxyResult> {
  const request = toCoreRequest(event);
  const response = await core(request);
  return toBufferedResult(response, { requestId: request.requestId, ...options });
}

export const handler = httpHandler(container);

await startInInit(container);
