/**
 * Failures meant for the client, each with a status and a one-line message. git prints the body
 * of a text/plain error response to the user, so the message is written for a person at a
 * terminal.
 */
export class HttpError extends Error {
  readonly code = 'HttpError';
  constructor(
    readonly status: number,
    message: string,
    readonly headers: Readonly<Record<string, string>> = {},
  ) {
    super(message);
  }
}

export const badRequest = (message: string) => new HttpError(400, message);
export const unauthorized = (message: string) =>
  new HttpError(401, message, { 'www-authenticate': 'Basic realm="narwal", charset="UTF-8"' });
export const forbidden = (message: string) => new HttpError(403, message);
export const notFound = (message: string) => new HttpError(404, message);
export const methodNotAllowed = (message: string) => new HttpError(405, message);
export const requestTimeout = (message: string) => new HttpError(408, message, { connection: 'close' });
export const payloadTooLarge = (message: string) => new HttpError(413, message);
export const unsupportedMediaType = (message: string) => new HttpError(415, message);
