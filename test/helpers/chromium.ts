/**
 * A real browser for tests: Debian's chromium, driven by playwright-core (which never downloads a
 * browser of its own). Installs the package when it is missing, the same way the RGW helper does.
 */
import { execFile } from 'node:child_process';
import { access } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { type Browser, chromium } from 'playwright-core';

const run = promisify(execFile);

export const CHROMIUM = '/usr/bin/chromium';
/** chromium itself, and a font so that screenshots show text on a bare machine. */
export const CHROMIUM_APT_PACKAGES = ['chromium', 'fonts-dejavu-core'] as const;

const CHROMIUM_ARGS = [
  '--headless',
  '--no-sandbox',
  '--disable-gpu',
  '--disable-background-networking',
  '--disable-component-update',
  '--no-first-run',
];

async function installed(): Promise<boolean> {
  try {
    await access(CHROMIUM);
    return true;
  } catch {
    return false;
  }
}

/**
 * Installs chromium from Debian when it is missing (about a minute on a fresh machine). Parallel
 * test workers serialise on the same flock as the other apt installs and re-check under it.
 */
export async function ensureChromiumInstalled(): Promise<void> {
  if (await installed()) return;
  const packages = CHROMIUM_APT_PACKAGES.join(' ');
  if (process.getuid?.() !== 0) {
    throw new Error(
      `${CHROMIUM} missing; install it as root with: apt-get update && apt-get install -y --no-install-recommends ${packages}`,
    );
  }
  console.log(`[chromium] ${CHROMIUM} not found: installing ${packages} with apt-get`);
  const started = Date.now();
  const install = `test -x ${CHROMIUM} || { apt-get update -q && apt-get install -y -q --no-install-recommends ${packages}; }`;
  await run('flock', [join(tmpdir(), 'narwal-apt-install.lock'), 'sh', '-c', install], {
    env: { ...process.env, DEBIAN_FRONTEND: 'noninteractive' },
    maxBuffer: 64 * 1024 * 1024,
  });
  if (!(await installed())) throw new Error(`[chromium] apt-get finished but ${CHROMIUM} is still missing`);
  console.log(`[chromium] installed in ${Math.round((Date.now() - started) / 1000)} s`);
}

export async function launchChromium(): Promise<Browser> {
  await ensureChromiumInstalled();
  return chromium.launch({ executablePath: CHROMIUM, args: CHROMIUM_ARGS, timeout: 60_000 });
}
