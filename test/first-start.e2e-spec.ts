import { execFile } from 'node:child_process';
import { createServer, type Server, type Socket } from 'node:net';
import { promisify } from 'node:util';
import { freePort, runUntilExit } from './utils/test-app.js';

const run = promisify(execFile);

/** A TCP server on 127.0.0.1 that accepts connections and never says a word: a host that hangs. */
async function silentServer(): Promise<{ port: number; close(): Promise<void> }> {
  const sockets = new Set<Socket>();
  const server: Server = createServer((socket) => {
    sockets.add(socket);
    socket.on('close', () => sockets.delete(socket));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as { port: number };
  return {
    port,
    close: () =>
      new Promise((resolve) => {
        for (const socket of sockets) socket.destroy();
        server.close(() => resolve());
      }),
  };
}

/** The command line's exit code, standard error and duration, with `env` alone (and PATH). */
async function cli(env: Record<string, string>, ...args: string[]) {
  const started = Date.now();
  try {
    await run(process.execPath, ['dist/cli.js', ...args], {
      env: { PATH: process.env.PATH, NODE_ENV: 'test', ...env },
    });
    return { code: 0, stderr: '', ms: Date.now() - started };
  } catch (error) {
    const { code, stderr } = error as { code: number; stderr: string };
    return { code, stderr, ms: Date.now() - started };
  }
}

describe('A database out of reach', () => {
  let silent: Awaited<ReturnType<typeof silentServer>>;
  beforeAll(async () => {
    silent = await silentServer();
  });
  afterAll(() => silent.close());

  it('fails the command line at once on a closed port, naming the address and what to check', async () => {
    const port = await freePort();
    const result = await cli(
      { DATABASE_URL: `postgres://admin:hunter2@127.0.0.1:${port}/things` },
      'api-keys',
      'list',
      '--account',
      'acme',
    );
    expect(result.code).toBe(1);
    expect(result.ms).toBeLessThan(5_000);
    const error = JSON.parse(result.stderr) as { error: string; code: string };
    expect(error.code).toBe('database_unreachable');
    expect(error.error).toContain(`PostgreSQL at 127.0.0.1:${port}`);
    expect(error.error).toContain('connection refused');
    expect(error.error).toContain('Check that PostgreSQL is running');
    expect(error.error).not.toContain('hunter2');
  });

  it('gives up on a host that never answers after DATABASE_CONNECT_TIMEOUT_MS, saying so', async () => {
    const result = await cli(
      {
        DATABASE_URL: `postgres://postgres@127.0.0.1:${silent.port}/things`,
        DATABASE_CONNECT_TIMEOUT_MS: '1500',
      },
      'migrate',
    );
    expect(result.code).toBe(1);
    expect(result.ms).toBeGreaterThanOrEqual(1_500);
    expect(result.ms).toBeLessThan(6_000);
    expect(JSON.parse(result.stderr)).toEqual({
      code: 'database_unreachable',
      error: expect.stringContaining(`127.0.0.1:${silent.port}`) as unknown,
    });
    expect(result.stderr).toContain('no answer within 1500 ms');
  });

  it('waits 5 s by default, well short of the pools’ own timeouts and retries', async () => {
    const result = await cli(
      { DATABASE_URL: `postgres://postgres@127.0.0.1:${silent.port}/things` },
      'users',
      'list',
      '--account',
      'acme',
    );
    expect(result.code).toBe(1);
    expect(result.ms).toBeLessThan(12_000);
    expect(result.stderr).toContain('no answer within 5000 ms');
  }, 20_000);

  it.each([
    ['a closed port', async () => freePort(), 'connection refused'],
    ['a host that never answers', () => Promise.resolve(silent.port), 'no answer within 1500 ms'],
  ])('stops the server at start-up on %s, with the same message', async (_, port, reason) => {
    const started = Date.now();
    const { code, output } = await runUntilExit({
      DATABASE_URL: `postgres://postgres@127.0.0.1:${await port()}/things`,
      DATABASE_CONNECT_TIMEOUT_MS: '1500',
    });
    expect(code).toBe(1);
    // Boot plus one 1.5 s wait: a loaded CI machine has taken over 6 s to boot and fail. A hang on
    // retries would take minutes, so the bound is loose on purpose.
    expect(Date.now() - started).toBeLessThan(20_000);
    expect(output).toContain('Startup failed: Cannot connect to PostgreSQL at 127.0.0.1:');
    expect(output).toContain(reason);
    expect(output).not.toContain('    at '); // a sentence, not a stack trace
  });
});
