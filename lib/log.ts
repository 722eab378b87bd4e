/** Structured logs, one JSON object a line, to stderr. Passed in everywhere, never imported as a global. */
import { redactor, SECRET_FIELD } from './auth/redact.js';

export interface Logger {
  info(message: string, fields?: Record<string, unknown>): void;
  warn(message: string, fields?: Record<string, unknown>): void;
  error(message: string, fields?: Record<string, unknown>): void;
}

/**
 * Every line is scrubbed of credentials before it is written (see auth/redact.ts): fields named
 * like credentials are replaced whole, and tokens, URL user-info and the configured `secrets`
 * are cut out of any text.
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
      (key, value) => (SECRET_FIELD.test(key) ? '[redacted]' : value),
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
