/**
 * A real browser for tests: Debian's chromium, driven by playwright-core (which never downloads a
 * browser of its own). systemPackages.ts installs the package when it is missing.
 */
import { type Browser, chromium } from 'playwright-core';
import { CHROMIUM as CHROMIUM_PACKAGES, ensureInstalled } from './systemPackages.js';

export const CHROMIUM = '/usr/bin/chromium';
const CHROMIUM_ARGS = [
  '--headless',
  '--no-sandbox',
  '--disable-gpu',
  '--disable-background-networking',
  '--disable-component-update',
  '--no-first-run',
];

export async function launchChromium(): Promise<Browser> {
  await ensureInstalled(CHROMIUM_PACKAGES);
  return chromium.launch({ executablePath: CHROMIUM, args: CHROMIUM_ARGS, timeout: 60_000 });
}
