/** Structured logs, one JSON object a line, to stderr. Passed in everywhere, never imported as a global. */
export interface Logger {
  info(message: string, fields?: Record<string, unknown>): void;
  warn(message: string, fields?: Record<string, unknown>): void;
  error(message: string, fields?: Record<string, unknown>): void;
}

export function jsonLogger(options: { quiet?: boolean; write?: (line: string) => void } = {}): Logger {
  const write = options.write ?? ((line: string) => process.stderr.write(line));
  const emit = (level: string, message: string, fields?: Record<string, unknown>) =>
    write(`${JSON.stringify({ time: new Date().toISOString(), level, message, ...fields })}\n`);
  return {
    info: (message, fields) => {
      if (!options.quiet) emit('info', message, fields);
    },
    warn: (message, fields) => emit('warn', message, fields),
    error: (message, fields) => emit('error', message, fields),
  };
}

export const silentLogger: Logger = { info: () => {}, warn: () => {}, error: () => {} };
