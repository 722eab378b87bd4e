/** `narwal token create`. */
import { parseArgs } from 'node:util';
import { cliContext, type ExitCode } from './context.js';

export async function token(args: string[]): Promise<ExitCode> {
  const [sub, ...rest] = args;
  const { values, positionals } = parseArgs({
    args: rest,
    allowPositionals: true,
    options: {
      owner: { type: 'string' },
      admin: { type: 'boolean' },
      create: { type: 'boolean' },
      read: { type: 'string', multiple: true },
      write: { type: 'string', multiple: true },
    },
  });
  if (sub !== 'create' || positionals[0] === undefined) {
    console.error(
      'narwal: usage: narwal token create NAME [--owner O] [--admin] [--create] [--read P]... [--write P]...',
    );
    return 2;
  }
  const app = await cliContext();
  const { secret } = await app.tokens.create({
    name: positionals[0],
    ...(values.owner ? { owner: values.owner } : {}),
    admin: values.admin ?? false,
    create: values.create ?? false,
    read: values.read ?? [],
    write: values.write ?? [],
  });
  console.log(secret);
  return 0;
}
