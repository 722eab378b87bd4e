/** Whether `error` is a system error with `code` (`ENOENT`, `EEXIST`, ...), as node:fs throws them. */
export function isCode(error: unknown, code: string): boolean {
  return error instanceof Error && 'code' in error && error.code === code;
}
