/** Structured logs, one JSON object a line, to stderr. Passed in everywhere, never imported as a global. */
import { redactor, SECRET_FIELD } from './auth/redact.js';

export interface Logger {
  info(message: string, fields?: Record<string, unknown>): void;
  warn(message: string, fields?: Record<string, unknown>): void;
  error(message: string, fields?: Record<string, unknown>): void;
}

/** An error as a log field: what JSON.stringify makes of an Error is `{}`. */
export interface LoggedError {
  readonly name: string;
  readonly message: string;
  /** The stable `code` narwal's errors carry (and node's system errors). */
  readonly code?: string | number;
  readonly cause?: LoggedError;
  readonly stack?: string;
}

/** Causes deeper than this are left out: a chain that long says nothing more. */
const MAX_CAUSES = 4;

/**
 * `error` as a log field: its name, message, `code` and cause (itself serialised, a few levels
 * deep), and its stack when asked. A thrown value that is not an Error keeps its text.
 */
export function serializeError(error: unknown, options: { stack?: boolean } = {}, depth = 0): LoggedError {
  if (!(error instanceof Error)) return { name: typeof error, message: String(error) };
  const code = (error as { code?: unknown }).code;
  const cause = error.cause;
  return {
    name: nameOf(error),
    message: error.message,
    ...(typeof code === 'string' || typeof code === 'number' ? { code } : {}),
    ...(cause !== undefined && depth < MAX_CAUSES ? { cause: serializeError(cause, {}, depth + 1) } : {}),
    ...(options.stack && error.stack ? { stack: error.stack } : {}),
  };
}

/** Most of narwal's errors leave `name` as 'Error' and say what they are by their class and `code`. */
function nameOf(error: Error): string {
  const className = error.constructor?.name;
  return error.name === 'Error' && className && className !== 'Error' ? className : error.name;
}

/**
 * Every line is scrubbed of credentials before it is written (see auth/redact.ts): fields named
 * like credentials are replaced whole, and tokens, URL user-info and the configured `secrets`
 * are cut out of any text. An Error passed as a field is written as serializeError makes it.
 */
export function jsonLogger(
  options: {
    quiet?: boolean;
    write?: (line: string) => void;
    secrets?: readonly (string | undefined)[];
  } = {},
): Logger {
  const write = options.write ?? ((line: string) => process.stderr.write(line));
  const redact = redactor(options.secrets);
  const emit = (level: string, message: string, fields?: Record<string, unknown>) => {
    const line = JSON.stringify(
      { time: new Date().toISOString(), level, message, ...fields },
      (key, value: unknown) => {
        if (SECRET_FIELD.test(key)) return '[redacted]';
        return value instanceof Error ? serializeError(value) : value;
      },
    );
    write(`${redact(line)}\n`);
  };
  return {
    info: (message, fields) => {
      if (!options.quiet) emit('info', message, fields);
    },
    warn: (message, fields) => emit('warn', message, fields),
    error: (message, fields) => emit('error', message, fields),
  };
}

export const silentLogger: Logger = { info: () => {}, warn: () => {}, error: () => {} };
