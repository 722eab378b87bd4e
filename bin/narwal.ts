/**
 * The narwal command line: `serve` runs the local (or pool) server; the other commands work on the
 * configured store directly, so they behave the same against the embedded store and against S3.
 */
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { createApp, createStore, loadAdminToken } from '../lib/app.js';
import { TokenStore } from '../lib/auth/TokenStore.js';
import { ConfigError, loadConfig } from '../lib/config.js';
import { createNodeServer } from '../lib/http/nodeServer.js';
import { jsonLogger } from '../lib/log.js';
import { parseRepoName } from '../lib/repoName.js';
import type { ObjectStore } from '../lib/store/ObjectStore.js';
import { REPOS_PREFIX } from '../lib/wal/keys.js';
import { Wal } from '../lib/wal/Wal.js';

const USAGE = `usage: narwal <command> [options]

commands:
  serve [--port N] [--host H] [--data DIR]   serve git over HTTP (default http://127.0.0.1:8080)
  repo create NAME [--public]                create an empty repository (NAME or OWNER/NAME)
  repo list                                  list repositories
  log REPO [--limit N]                       print the newest log entries of a repository
  checkpoint REPO                            make a checkpoint at the head of the log now
  token create NAME [--owner O] [--admin] [--create] [--read PATTERN]... [--write PATTERN]...
                                             issue a token; patterns like "team/*" or "**"

Configuration comes from the environment; see the README.`;

async function main(argv: string[]): Promise<number> {
  const [command, ...rest] = argv;
  switch (command) {
    case 'serve':
      return serve(rest);
    case 'repo':
      return repo(rest);
    case 'log':
      return log(rest);
    case 'token':
      return token(rest);
    case 'checkpoint':
      return checkpoint(rest);
    case undefined:
    case 'help':
    case '--help':
    case '-h':
      console.log(USAGE);
      return command === undefined ? 2 : 0;
    default:
      console.error(`narwal: unknown command ${JSON.stringify(command)}\n\n${USAGE}`);
      return 2;
  }
}

async function serve(args: string[]): Promise<number> {
  const { values } = parseArgs({
    args,
    options: { port: { type: 'string' }, host: { type: 'string' }, data: { type: 'string' } },
  });
  const config = loadConfig(process.env, {
    ...(values.port !== undefined ? { port: portNumber(values.port) } : {}),
    ...(values.host !== undefined ? { host: values.host } : {}),
    ...(values.data !== undefined ? { dataDir: values.data } : {}),
  });
  const logger = jsonLogger({ quiet: config.quiet });
  const app = await createApp(config, logger);
  const server = createNodeServer(app.handler, logger);
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(config.port, config.host, resolve);
  });
  const address = server.address();
  const port = typeof address === 'object' && address ? address.port : config.port;
  const url = config.publicUrl ?? `http://${config.host}:${port}`;
  const tokenFile = join(config.dataDir, 'admin-token');
  const credential = app.adminToken.generated
    ? app.adminToken.value
    : config.adminToken
      ? '$NARWAL_ADMIN_TOKEN'
      : `$(cat ${tokenFile})`;
  console.log(
    [
      `narwal listening on ${url} (store: ${config.store.kind === 'fs' ? config.store.root : `s3://${config.store.bucket}`})`,
      app.adminToken.generated
        ? `admin token (generated, saved in ${tokenFile}): ${app.adminToken.value}`
        : '',
      'push a repository:',
      `  git push ${url.replace('://', `://admin:${credential}@`)}/me/project.git HEAD:main`,
      `  git clone ${url.replace('://', `://admin:${credential}@`)}/me/project.git`,
    ]
      .filter((line) => line !== '')
      .join('\n'),
  );
  // Idle eviction of the shared cache, as a scheduled function does it in Lambda.
  const sweeper = setInterval(
    () => void app.sweep().catch((error: unknown) => logger.warn('sweep failed', { error: String(error) })),
    Math.min(config.idleEvictMs, 5 * 60_000),
  );
  sweeper.unref();
  const stop = (signal: string) => {
    logger.warn('stopping', { signal });
    clearInterval(sweeper);
    server.close();
    server.closeAllConnections();
  };
  process.once('SIGINT', () => stop('SIGINT'));
  process.once('SIGTERM', () => stop('SIGTERM'));
  // A stray rejection in background work (prewarm, checkpoint, lease renewal) must not take
  // the node down: log it and keep serving.
  process.on('unhandledRejection', (error) => logger.error('unhandled rejection', { error: String(error) }));
  await new Promise<void>((resolve) => server.once('close', () => resolve()));
  await app.close();
  return 0;
}

/** What the management commands need: the store and the log, without a node's cache or git. */
async function cliApp(): Promise<{ store: ObjectStore; wal: Wal; tokens: TokenStore }> {
  const config = loadConfig();
  const store = await createStore(config);
  return { store, wal: new Wal(store), tokens: new TokenStore(store, (await loadAdminToken(config)).value) };
}

async function repo(args: string[]): Promise<number> {
  const [sub, ...rest] = args;
  const { values, positionals } = parseArgs({
    args: rest,
    allowPositionals: true,
    options: { public: { type: 'boolean' } },
  });
  const app = await cliApp();
  if (sub === 'create') {
    const name = parseRepoName(positionals[0] ?? '');
    const created = await app.wal.createRepo(name, { public: values.public ?? false });
    console.log(`created ${name}${created.index.public ? ' (public)' : ''}`);
    return 0;
  }
  if (sub === 'list') {
    let startAfter: string | undefined;
    do {
      const page = await app.store.list(REPOS_PREFIX, startAfter ? { startAfter } : {});
      for (const key of page.keys) {
        const match = /^repos\/(.+)\.git\/index\.json$/.exec(key);
        if (match) console.log(match[1]);
      }
      startAfter = page.next;
    } while (startAfter);
    return 0;
  }
  console.error(`narwal: usage: narwal repo create NAME [--public] | narwal repo list`);
  return 2;
}

async function log(args: string[]): Promise<number> {
  const { values, positionals } = parseArgs({
    args,
    allowPositionals: true,
    options: { limit: { type: 'string' } },
  });
  const name = parseRepoName(positionals[0] ?? '');
  const limit = Number(values.limit ?? 20);
  const app = await cliApp();
  const loaded = await app.wal.readIndex(name);
  if (loaded === null) {
    console.error(`narwal: repository ${name} not found`);
    return 1;
  }
  const items = await app.wal.itemsAfter(loaded.index, Math.max(0, loaded.index.seq - limit));
  for (const item of items.reverse()) {
    console.log(`#${item.seq} ${item.time} ${item.who.token}${item.atomic ? ' (atomic)' : ''}`);
    for (const u of item.updates) console.log(`    ${u.ref} ${u.old.slice(0, 10)} -> ${u.new.slice(0, 10)}`);
  }
  return 0;
}

async function token(args: string[]): Promise<number> {
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
  const app = await cliApp();
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

async function checkpoint(args: string[]): Promise<number> {
  const { positionals } = parseArgs({ args, allowPositionals: true, options: {} });
  const name = parseRepoName(positionals[0] ?? '');
  const config = loadConfig();
  const app = await createApp(config, jsonLogger({ quiet: true }));
  try {
    const made = await app.checkpointer.make(name);
    console.log(
      made
        ? `checkpoint of ${name} at entry ${made.seq}: ${made.packs.length} pack(s), ${made.bytes} bytes`
        : `${name}: nothing new to checkpoint (or another node is making one)`,
    );
    return 0;
  } finally {
    await app.close();
  }
}

function portNumber(raw: string): number {
  const port = Number(raw);
  if (!Number.isInteger(port) || port < 0 || port > 65535)
    throw new ConfigError(`--port must be 0-65535, not ${raw}`);
  return port;
}

main(process.argv.slice(2)).then(
  (code) => {
    process.exitCode = code;
  },
  (error: unknown) => {
    console.error(`narwal: ${error instanceof Error ? error.message : String(error)}`);
    process.exitCode = 1;
  },
);
