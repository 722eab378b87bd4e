/** The last line of `text` with anything on it, trimmed; undefined when there is none. */
export function lastLine(text: string): string | undefined {
  return text
    .split('\n')
    .map((line) => line.trim())
    .filter((line) => line !== '')
    .pop();
}
