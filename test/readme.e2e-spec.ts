import { spawn } from 'node:child_process';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { delimiter, dirname, join } from 'node:path';
import { startTestApp, type TestApp } from './utils/test-app.js';

interface BashRun {
  code: number | null;
  stdout: string;
  stderr: string;
}

const RUN_TIMEOUT_MS = 60_000;

/** The bash block that follows the `<!-- walkthrough ... -->` marker in README.md, exactly as written. */
function walkthrough(readme: string): string {
  const block = /<!-- walkthrough[^>]*-->\s*```bash\n([\s\S]*?)\n```/.exec(readme);
  if (!block) throw new Error('README.md has no ```bash block after a <!-- walkthrough --> marker');
  return block[1];
}

/**
 * Runs `script` with bash as a careful reader would (`set -euo pipefail`: the first failing step stops
 * it), from the repository root so that `node dist/cli.js` resolves, in a process group of its own so
 * that a run past its time is stopped with the curl or sleep it is waiting for.
 */
function runBash(script: string, env: Record<string, string>): Promise<BashRun> {
  return new Promise((resolve, reject) => {
    const child = spawn('bash', ['-euo', 'pipefail', '-c', script], {
      cwd: process.cwd(),
      env,
      stdio: ['ignore', 'pipe', 'pipe'],
      detached: true,
    });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
    child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
    const timer = setTimeout(() => {
      if (child.pid !== undefined) process.kill(-child.pid, 'SIGKILL');
    }, RUN_TIMEOUT_MS);
    child.on('error', reject);
    child.on('close', (code) => {
      clearTimeout(timer);
      resolve({ code, stdout, stderr });
    });
  });
}

describe('README walkthrough', () => {
  let t: TestApp;
  let script: string;
  let tmp: string;
  let env: Record<string, string>;

  beforeAll(async () => {
    script = walkthrough(await readFile(join(process.cwd(), 'README.md'), 'utf8'));
    t = await startTestApp();
    tmp = await mkdtemp(join(tmpdir(), 'readme-walkthrough-'));
    // A reader's shell: no test configuration, only where the server and its database are. This
    // process's node comes first, so that scripts/node.sh finds Node.js 24 and fetches nothing.
    env = {
      PATH: [dirname(process.execPath), process.env.PATH ?? ''].join(delimiter),
      HOME: process.env.HOME ?? tmp,
      TMPDIR: tmp,
      BASE: t.url,
      DATABASE_URL: t.env.DATABASE_URL,
    };
  });
  afterAll(async () => {
    await t.close();
    await rm(tmp, { recursive: true, force: true });
  });

  it('runs from the API key to the deleted dataset, printing what each step found', async () => {
    const run = await runBash(script, env);
    expect(run).toMatchObject({ code: 0 });

    const ready = [...run.stdout.matchAll(/^(doc_\w+) ready$/gm)].map((line) => line[1]);
    expect(ready).toHaveLength(2);
    const [textId, fileId] = ready;

    // The search's best result is the uploaded file's chunk, with where it comes from.
    const best = /^\{\n[\s\S]*?\n\}$/m.exec(run.stdout);
    expect(JSON.parse(best?.[0] ?? 'null')).toMatchObject({
      document_id: fileId,
      filename: 'reset-password.md',
      chunk_index: 0,
      char_start: 0,
      content: expect.stringContaining('Open Settings, then Security'),
    });
    expect(run.stdout).toContain('{"query":"install on linux","top":"Installing"}\n');
    expect(run.stdout).toContain('{"query":"reset a password","top":"reset-password.md"}\n');
    for (const id of [textId, fileId]) {
      expect(run.stdout).toContain(`{"document_id":"${id}","status":"ready","chunks_created":1}\n`);
    }
    expect(run.stdout.endsWith('204\n204\n')).toBe(true);

    const left = await t.sql.query<{ datasets: number; documents: number }>(
      'SELECT (SELECT count(*)::int FROM datasets) AS datasets, (SELECT count(*)::int FROM documents) AS documents',
    );
    expect(left.rows[0]).toEqual({ datasets: 0, documents: 0 });
  });

  it('stops at the first step that fails, here a search sent to a wrong route', async () => {
    const broken = script.replace('"$BASE/v1/mcp/query"', '"$BASE/v1/mcp/querry"');
    expect(broken).not.toBe(script);

    const run = await runBash(broken, env);

    expect(run.code).not.toBe(0);
    expect(run.stdout).toMatch(/^doc_\w+ ready$/m);
    expect(run.stderr).toContain('returned error: 404');
    expect(run.stdout).not.toContain('"query":"install on linux"');
  });
});
