/**
 * The git function: every HTTP request (git smart HTTP, the front page) through the one core
 * handler, with responses streamed through API Gateway (REST, responseTransferMode STREAM), so an
 * upload-pack answer flows as git produces it and may exceed the buffered 6 MB. Requests are
 * still buffered by API Gateway, under Lambda's 6 MB: pushes that may not fit are sent to the
 * pool at info/refs (lib/http/transferRouter.ts).
 */
import middy from '@middy/core';
import type { APIGatewayProxyEvent } from 'aws-lambda';
import { toCoreRequest } from './adapter/apiGatewayRequest.js';
import { type Container, container, startInInit } from './adapter/container.js';
import { errorAsResponse } from './adapter/errorMiddleware.js';
import { type StreamedResult, toStreamedResult } from './adapter/streamedResult.js';

export function gitHandler(from: Container) {
  return middy<APIGatewayProxyEvent, StreamedResult>(
    async (event: APIGatewayProxyEvent): Promise<StreamedResult> => {
      const app = await from.app();
      const request = toCoreRequest(event);
      return toStreamedResult(await app.handler(request), request.method);
    },
    { streamifyResponse: true, requestEnd: () => from.idle() },
  ).use(errorAsResponse(from.logger, (response, event) => toStreamedResult(response, event.httpMethod)));
}

export const handler = gitHandler(container);

await startInInit(container);
