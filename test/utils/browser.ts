import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { type Browser, chromium, type Page } from 'playwright-core';

/** Debian's chromium, installed by scripts/setup.sh; never a browser download. */
const CHROMIUM = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium';
const ARTIFACTS = join(process.cwd(), 'test', 'artifacts');

export function launchChromium(): Promise<Browser> {
  return chromium.launch({ executablePath: CHROMIUM, args: ['--no-sandbox'] });
}

/** Runs a step of a browser test; when it fails, a screenshot of every open page goes to test/artifacts/. */
export async function inStep<T>(name: string, pages: () => Page[], work: () => Promise<T>): Promise<T> {
  try {
    return await work();
  } catch (error) {
    mkdirSync(ARTIFACTS, { recursive: true });
    for (const [i, page] of pages().entries()) {
      if (!page.isClosed())
        await page.screenshot({ path: join(ARTIFACTS, `${name.replace(/\W+/g, '-')}-${i}.png`) });
    }
    throw error;
  }
}
