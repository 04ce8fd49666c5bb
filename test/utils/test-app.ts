import { type ChildProcess, execFile, spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import http from 'node:http';
import https from 'node:https';
import { createServer } from 'node:net';
import { join } from 'node:path';
import { promisify } from 'node:util';
import pg from 'pg';
import { createClient, createCluster } from 'redis';
import request from 'supertest';
import type TestAgent from 'supertest/lib/agent.js';
import { createTestDatabase, type TestDatabase } from './test-database.js';

export interface CreatedKey {
  account_id: string;
  key_id: string;
  api_key: string;
}

export interface TestApp {
  url: string;
  http: TestAgent;
  env: Record<string, string>;
  database: TestDatabase;
  /** A direct connection to the spec's database, for setting up and checking rows. */
  sql: pg.Pool;
  /** Everything the server printed (its JSON log lines). */
  output(): string;
  /** Waits for the server to print `text` (log lines are written after the response is sent). */
  waitForOutput(text: string, timeoutMs?: number): Promise<string>;
  /** Runs the admin command line against this app's database and returns its JSON output. */
  cli(...args: string[]): Promise<unknown>;
  /** The command line with extra environment, e.g. another embedding provider. */
  cliWith(env: Record<string, string>, ...args: string[]): Promise<unknown>;
  /** The command line with `input` on its standard input (a password, for `users create`). */
  cliInput(input: string, ...args: string[]): Promise<unknown>;
  createApiKey(account?: string): Promise<CreatedKey>;
  /**
   * Sends the server SIGTERM (SIGKILL 5 s later) and resolves, once it has exited, with how: Nest
   * re-raises the signal once it has shut down. `close` still cleans up.
   */
  terminate(): Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
  close(): Promise<void>;
}

const run = promisify(execFile);
// A model-loading server on a loaded 2-core machine has taken over 20 s to listen.
const BOOT_TIMEOUT_MS = 45_000;

export async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const address = server.address();
      server.close(() => resolve(typeof address === 'object' && address ? address.port : 0));
    });
  });
}

/**
 * The built server (`node dist/main.js`) run with `env` alone (and PATH; by default a free port, the
 * test environment and no migration), for a configuration it must refuse: waits for it to exit, and
 * gives its exit code and its output (stdout and stderr).
 */
export async function runUntilExit(
  env: Record<string, string>,
): Promise<{ code: number | null; output: string }> {
  const defaults = { NODE_ENV: 'test', PORT: String(await freePort()), MIGRATE_ON_BOOT: 'false' };
  const child = spawn(process.execPath, ['dist/main.js'], {
    env: { PATH: process.env.PATH, ...defaults, ...env },
  });
  let output = '';
  child.stderr.on('data', (chunk: Buffer) => (output += chunk.toString()));
  child.stdout.on('data', (chunk: Buffer) => (output += chunk.toString()));
  // 'close', not 'exit': by then its output has all been read.
  const code = await new Promise<number | null>((resolve) => child.on('close', resolve));
  return { code, output };
}

/**
 * The built server (`node dist/main.js`) in a child process, with a database of its own (cloned from
 * the migrated template) and a Redis key prefix of its own, so that spec files run in parallel
 * without seeing each other. The specs talk to it over HTTP only, as a client would.
 */
export interface TestAppOptions {
  /** Start from an empty database instead of the migrated template, so that the server migrates it. */
  emptyDatabase?: boolean;
  /** The server terminates TLS itself (env has TLS_CERT_FILE and TLS_KEY_FILE). */
  tls?: boolean;
  /** Run on this database, which the caller keeps and drops, instead of one of the app's own. */
  database?: TestDatabase;
}

export async function startTestApp(
  env: Record<string, string> = {},
  options: TestAppOptions = {},
): Promise<TestApp> {
  const database = options.database ?? (await createTestDatabase(options.emptyDatabase ? null : undefined));
  const dropDatabase = () => (options.database ? Promise.resolve() : database.drop());
  const port = await freePort();
  const fullEnv: Record<string, string> = {
    PATH: process.env.PATH ?? '',
    NODE_ENV: 'test',
    LOG_LEVEL: 'info',
    // Keyword-only unless a spec asks for a model: most specs do not need vectors.
    EMBEDDING_PROVIDER: 'none',
    // Every spec signs in and runs OAuth flows from one address; the limit's own specs set it low.
    RATE_LIMIT_AUTH_ENDPOINTS: '100000',
    MODELS_DIR: join(process.cwd(), '.cache', 'models'),
    REDIS_URL: process.env.REDIS_URL ?? 'redis://127.0.0.1:6379',
    // TEST_REDIS_CLUSTER=true runs the specs against the Redis Cluster that REDIS_URL names.
    ...(process.env.TEST_REDIS_CLUSTER === 'true' ? { REDIS_CLUSTER: 'true' } : {}),
    ...env,
    PORT: String(port),
    DATABASE_URL: database.url,
    REDIS_PREFIX: `dss_test_${randomBytes(6).toString('hex')}`,
  };
  const child = spawn(process.execPath, ['dist/main.js'], {
    env: fullEnv,
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let output = '';
  child.stdout.on('data', (chunk: Buffer) => (output += chunk.toString()));
  child.stderr.on('data', (chunk: Buffer) => (output += chunk.toString()));
  const url = `${options.tls ? 'https' : 'http'}://127.0.0.1:${port}`;
  try {
    await waitUntilListening(url, child, () => output);
  } catch (error) {
    child.kill('SIGKILL');
    await dropDatabase();
    throw error;
  }
  const sql = new pg.Pool({ connectionString: database.url, max: 2 });

  const cliWithInput = async (env: Record<string, string>, input: string, ...args: string[]) => {
    const running = run(process.execPath, ['dist/cli.js', ...args], { env: { ...fullEnv, ...env } });
    running.child.stdin?.end(input);
    const { stdout } = await running;
    return JSON.parse(stdout) as unknown;
  };
  const cliWith = (env: Record<string, string>, ...args: string[]) => cliWithInput(env, '', ...args);
  const cli = (...args: string[]) => cliWith({}, ...args);

  return {
    url,
    http: options.tls ? insecureAgent(url) : request(url),
    env: fullEnv,
    database,
    sql,
    output: () => output,
    async waitForOutput(text, timeoutMs = 5_000) {
      const deadline = Date.now() + timeoutMs;
      while (!output.includes(text)) {
        if (Date.now() > deadline) throw new Error(`server never printed ${text}:\n${output}`);
        await new Promise((resolve) => setTimeout(resolve, 20));
      }
      return output;
    },
    cli,
    cliWith,
    cliInput: (input, ...args) => cliWithInput({}, input, ...args),
    createApiKey: (account = `account-${randomBytes(4).toString('hex')}`) =>
      cli('api-keys', 'create', '--account', account) as Promise<CreatedKey>,
    async terminate() {
      await stopProcess(child);
      return { code: child.exitCode, signal: child.signalCode };
    },
    async close() {
      await stopProcess(child);
      await sql.end();
      await deleteRedisKeys(fullEnv.REDIS_URL, fullEnv.REDIS_PREFIX, fullEnv.REDIS_CLUSTER === 'true');
      await dropDatabase();
    },
  };
}

async function waitUntilListening(url: string, child: ChildProcess, output: () => string): Promise<void> {
  const deadline = Date.now() + BOOT_TIMEOUT_MS;
  while (Date.now() < deadline) {
    if (child.exitCode !== null) throw new Error(`server exited with ${child.exitCode}:\n${output()}`);
    if (await answers(`${url}/health`)) return;
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  throw new Error(`server did not start within ${BOOT_TIMEOUT_MS} ms:\n${output()}`);
}

/** True when something answers 2xx at `url`; self-signed certificates are accepted (test servers only). */
function answers(url: string): Promise<boolean> {
  return new Promise((resolve) => {
    const get = url.startsWith('https') ? https.get : http.get;
    get(url, { rejectUnauthorized: false }, (response) => {
      response.resume();
      resolve((response.statusCode ?? 500) < 300);
    }).on('error', () => resolve(false));
  });
}

/** A supertest agent for a server with a self-signed certificate. */
function insecureAgent(url: string): TestAgent {
  const agent = request.agent(url);
  agent.disableTLSCerts();
  return agent;
}

export async function stopProcess(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return;
  const exited = new Promise((resolve) => child.once('exit', resolve));
  child.kill('SIGTERM');
  const timer = setTimeout(() => child.kill('SIGKILL'), 5_000);
  await exited;
  clearTimeout(timer);
}

async function deleteRedisKeys(url: string, prefix: string, cluster: boolean): Promise<void> {
  if (cluster) return deleteClusterKeys(url.split(','), prefix);
  const redis = createClient({ url, socket: { reconnectStrategy: false } });
  redis.on('error', () => undefined);
  // A spec may point the server at a Redis that is not there; then there is nothing to clean.
  if (
    !(await redis.connect().then(
      () => true,
      () => false,
    ))
  )
    return;
  try {
    for await (const keys of redis.scanIterator({ MATCH: `${prefix}:*`, COUNT: 500 })) {
      if (keys.length > 0) await redis.del(keys);
    }
  } finally {
    await redis.close();
  }
}

/**
 * A cluster's keys are scanned on every master, and deleted one by one: keys of several slots in one
 * DEL are refused. Bull's keys start with `{<prefix>:bull}`, the others with `<prefix>:`.
 */
async function deleteClusterKeys(urls: string[], prefix: string): Promise<void> {
  const cluster = createCluster({
    rootNodes: urls.map((url) => ({ url })),
    defaults: { socket: { reconnectStrategy: false } },
  });
  cluster.on('error', () => undefined);
  if (
    !(await cluster.connect().then(
      () => true,
      () => false,
    ))
  )
    return;
  try {
    for (const master of cluster.masters) {
      const node = await cluster.nodeClient(master);
      for (const match of [`${prefix}:*`, `{${prefix}:*`]) {
        for await (const keys of node.scanIterator({ MATCH: match, COUNT: 500 })) {
          await Promise.all(keys.map((key) => node.unlink(key)));
        }
      }
    }
  } finally {
    await cluster.close();
  }
}

/** A second API process of the app (same database and Redis prefix), listening on a port of its own. */
export async function startSecondApi(t: TestApp): Promise<{ url: string; stop(): Promise<void> }> {
  const port = await freePort();
  const second = await startProcess(t, { PORT: String(port) }, '"listening"');
  return { url: `http://127.0.0.1:${port}`, stop: () => second.stop() };
}

/** Another server process on the same database and Redis prefix, e.g. a worker (ROLE=worker). */
export async function startProcess(
  t: TestApp,
  env: Record<string, string>,
  readyLine: string,
): Promise<{ output(): string; alive(): boolean; stop(signal?: NodeJS.Signals): Promise<void> }> {
  const child = spawn(process.execPath, ['dist/main.js'], {
    env: { ...t.env, ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let output = '';
  child.stdout.on('data', (chunk: Buffer) => (output += chunk.toString()));
  child.stderr.on('data', (chunk: Buffer) => (output += chunk.toString()));
  // 'close' comes once the output has all been read, which 'exit' does not wait for.
  const closed = new Promise((resolve) => child.once('close', resolve));
  const deadline = Date.now() + BOOT_TIMEOUT_MS;
  while (!output.includes(readyLine)) {
    if (child.exitCode !== null || Date.now() > deadline) {
      child.kill('SIGKILL');
      await closed;
      throw new Error(`process did not print "${readyLine}":\n${output}`);
    }
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  return {
    output: () => output,
    alive: () => child.exitCode === null && child.signalCode === null,
    stop: async (signal: NodeJS.Signals = 'SIGTERM') => {
      if (signal === 'SIGKILL') {
        const exited = new Promise((resolve) => child.once('exit', resolve));
        child.kill('SIGKILL');
        await exited;
      } else {
        await stopProcess(child);
      }
    },
  };
}

export function bearer(key: CreatedKey | string): { Authorization: string } {
  return { Authorization: `Bearer ${typeof key === 'string' ? key : key.api_key}` };
}
