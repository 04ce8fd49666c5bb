import 'reflect-metadata';
import { parseArgs } from 'node:util';
import { type DynamicModule, Module } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import { pino } from 'pino';
import { AppError } from 'src/common/errors/app-error.js';
import { LoggingModule } from 'src/common/logging/logging.module.js';
import { ConfigError } from 'src/config/define.js';
import { configModule, configTable, type Configuration, loadConfiguration } from 'src/configuration.js';
import { checkDatabaseConnection } from 'src/database/connection-check.js';
import { DatabaseModule } from 'src/database/database.module.js';
import { migrate } from 'src/database/migrate.js';
import { checkLexemeTable } from 'src/modules/chunk-index/lexeme-source.js';
import { ApiKeysModule } from 'src/modules/auth/api-keys/api-keys.module.js';
import { ApiKeysService } from 'src/modules/auth/api-keys/api-keys.service.js';
import { EmbeddingsModule } from 'src/modules/embeddings/embeddings.module.js';
import { ReembedService } from 'src/modules/embeddings/reembed.service.js';
import { readyEvent, REDIS, type Redis, RedisModule } from 'src/common/redis/redis.module.js';
import { UsersModule } from 'src/modules/auth/users/users.module.js';
import { OAuthClientsModule } from 'src/modules/auth/oauth/clients/oauth-clients.module.js';
import { ClientsService } from 'src/modules/auth/oauth/clients/clients.service.js';
import { UsersService } from 'src/modules/auth/users/users.service.js';

const USAGE = `Usage:
  node dist/cli.js migrate
  node dist/cli.js routes
  node dist/cli.js config-table
  node dist/cli.js api-keys create --account <name>
  node dist/cli.js api-keys list --account <name>
  node dist/cli.js api-keys revoke <key-id>
  node dist/cli.js datasets reembed <dataset-id>
  node dist/cli.js users create --account <name> --email <email> [--role admin|member|viewer] [--name <display name>]
  node dist/cli.js users list --account <name>
  node dist/cli.js users disable <user-id>
  node dist/cli.js users set-password <user-id>
  node dist/cli.js users revoke-grants <user-id>
  node dist/cli.js oauth-clients list
  node dist/cli.js oauth-clients delete <client-id>
  node dist/cli.js documents import <dataset-id> <folder | file.jsonl> [--url <server>] [--api-key <key>]
  node dist/cli.js datasets export <dataset-id> --out <file> [--url <server>] [--api-key <key>]
  node dist/cli.js datasets import <file> [--name <name>] [--url <server>] [--api-key <key>]

users create and users set-password read the password from standard input when it is not a terminal
(one line; 12-1,024 characters); otherwise, or when the input is empty, they generate one and print it.

documents import uploads every file of a folder (recursively; hidden ones left out), or each line of a
.jsonl file as the bulk route takes it, to the server at --url (or DSS_URL; default http://localhost:3000)
with --api-key (or DSS_API_KEY), in requests of at most 100 documents and 16 MiB, each with an
Idempotency-Key made from its content, so that a re-run creates nothing twice. It needs no database.
Progress goes to stderr; the summary line says which documents failed, and the exit code is 1 if any did.

datasets export downloads a dataset's archive (docs/export-format.md) from the server into <file>, and
datasets import uploads one to make a new dataset of the key's account (--name replaces the archive's
name), both over HTTP with --url and --api-key (or DSS_URL, DSS_API_KEY) and no database. A refusal
prints {"error", "code"} on stderr (the server's code, such as archive_corrupt) with exit code 1.

config-table prints the README's tables of environment variables (markdown), from their declarations.

Every other command prints one JSON line on stdout. Configuration comes from the same environment as the server.`;

class UsageError extends Error {}

@Module({})
class CliModule {
  /** The embedding model is loaded only for the commands that embed. */
  static forRoot(config: Configuration, logger: pino.Logger, options: { embedding: boolean }): DynamicModule {
    return {
      module: CliModule,
      imports: [
        configModule(config),
        LoggingModule.forRoot(logger),
        DatabaseModule,
        ApiKeysModule,
        RedisModule,
        UsersModule,
        OAuthClientsModule,
        ...(options.embedding ? [EmbeddingsModule] : []),
      ],
    };
  }
}

function print(value: unknown): void {
  process.stdout.write(`${JSON.stringify(value)}\n`);
}

/** The command line's words; an unknown option or one without its value is a usage error. */
function parse(argv: string[]) {
  try {
    return parseArgs({
      args: argv,
      allowPositionals: true,
      options: {
        account: { type: 'string' },
        email: { type: 'string' },
        role: { type: 'string' },
        name: { type: 'string' },
        url: { type: 'string' },
        'api-key': { type: 'string' },
        out: { type: 'string' },
        help: { type: 'boolean', short: 'h' },
      },
    });
  } catch (error) {
    // node:util's parse errors are TypeErrors with an ERR_PARSE_ARGS_* code.
    const code = (error as { code?: unknown }).code;
    if (typeof code === 'string' && code.startsWith('ERR_PARSE_ARGS_')) {
      throw new UsageError((error as Error).message);
    }
    throw error;
  }
}

async function run(argv: string[]): Promise<number | void> {
  const { positionals, values } = parse(argv);
  if (values.help) {
    process.stdout.write(`${USAGE}\n`);
    return;
  }
  const [group, command, argument] = positionals;
  // A client of the public API: neither the configuration nor a database is needed.
  if (group === 'documents') return importCommand(positionals.slice(1), values);
  if (group === 'datasets' && (command === 'export' || command === 'import')) {
    return transferCommand(positionals.slice(1), values);
  }
  // The declarations alone: the environment need not be valid.
  if (group === 'config-table' && command === undefined) {
    process.stdout.write(`${configTable()}\n`);
    return;
  }
  const config = loadConfiguration(process.env);
  // Logs go to stderr so that stdout carries only the command's JSON.
  const logger = pino({ level: config.logging.level === 'silent' ? 'silent' : 'warn' }, pino.destination(2));
  const known = group === 'migrate' || group === 'routes' ? command === undefined : Boolean(command);
  if (!['migrate', 'routes', 'api-keys', 'datasets', 'users', 'oauth-clients'].includes(group) || !known) {
    throw new UsageError('unknown command');
  }
  if (group === 'routes') {
    print({ routes: await listRoutes(config, logger) });
    return;
  }
  await checkDatabaseConnection(config.database);

  if (group === 'migrate') {
    checkLexemeTable();
    print({ applied: await migrate(config.database, logger) });
    return;
  }

  const context = await NestFactory.createApplicationContext(
    // The command line answers no searches: like a worker, it needs no query-embedding thread. It
    // never downloads a model either: `datasets reembed` uses the one the server put in MODELS_DIR.
    CliModule.forRoot(
      {
        ...config,
        core: { ...config.core, role: 'worker' },
        embeddings: { ...config.embeddings, allowDownload: false },
      },
      logger,
      { embedding: group === 'datasets' },
    ),
    // A failure to start is reported below, on stderr, rather than ending the process silently.
    { logger: false, abortOnError: false },
  );
  try {
    if (group === 'datasets') {
      if (command !== 'reembed' || !argument) throw new UsageError('datasets reembed needs <dataset-id>');
      // Progress for whoever watches a terminal; a script reads the one JSON line at the end.
      const progress = process.stderr.isTTY
        ? (done: number) => process.stderr.write(`\rre-embedded ${done} chunks`)
        : undefined;
      const result = await context.get(ReembedService).reembed(argument, progress);
      if (progress) process.stderr.write('\n');
      print(result);
      return;
    }
    if (group === 'oauth-clients') {
      await runOAuthClients(context.get(ClientsService), command, argument);
      return;
    }
    if (group === 'users') {
      await runUsers(context.get(UsersService), command, argument, values, () =>
        redisReady(context.get(REDIS)),
      );
      return;
    }
    const apiKeys = context.get(ApiKeysService);
    switch (command) {
      case 'create': {
        if (!values.account) throw new UsageError('api-keys create needs --account <name>');
        const created = await apiKeys.create(values.account);
        print({ account_id: created.account_id, key_id: created.key_id, api_key: created.api_key });
        return;
      }
      case 'list':
        if (!values.account) throw new UsageError('api-keys list needs --account <name>');
        print({ account: values.account, api_keys: await apiKeys.list(values.account) });
        return;
      case 'revoke':
        if (!argument) throw new UsageError('api-keys revoke needs <key-id>');
        await apiKeys.revoke(argument);
        print({ revoked: argument });
        return;
      default:
        throw new UsageError(`unknown api-keys command "${command}"`);
    }
  } finally {
    await context.close();
  }
}

async function importCommand(args: string[], values: { url?: string; 'api-key'?: string }): Promise<number> {
  const [command, datasetId, path, extra] = args;
  if (command !== 'import' || !datasetId || !path || extra !== undefined) {
    throw new UsageError('documents import needs <dataset-id> and <path>');
  }
  // The command line's own environment (not the server's configuration) names the server to talk to.
  const env = process.env;
  const apiKey = values['api-key'] ?? env.DSS_API_KEY;
  if (!apiKey) throw new UsageError('documents import needs --api-key <key> or DSS_API_KEY');
  const { importDocuments, progressReporter, ImportError } = await import('src/cli/documents-import.js');
  try {
    const summary = await importDocuments({
      datasetId,
      path,
      url: values.url ?? env.DSS_URL ?? 'http://localhost:3000',
      apiKey,
      progress: progressReporter(process.stderr),
    });
    print(summary);
    return summary.failed > 0 ? 1 : 0;
  } catch (error) {
    if (!(error instanceof ImportError)) throw error;
    process.stderr.write(`${JSON.stringify({ error: error.message, code: error.code })}\n`);
    return 1;
  }
}

async function transferCommand(
  args: string[],
  values: { url?: string; 'api-key'?: string; out?: string; name?: string },
): Promise<number> {
  const [command, argument, extra] = args;
  if (!argument || extra !== undefined) {
    throw new UsageError(
      command === 'export' ? 'datasets export needs <dataset-id>' : 'datasets import needs <file>',
    );
  }
  if (command === 'export' && !values.out) throw new UsageError('datasets export needs --out <file>');
  const env = process.env;
  const apiKey = values['api-key'] ?? env.DSS_API_KEY;
  if (!apiKey) throw new UsageError(`datasets ${command} needs --api-key <key> or DSS_API_KEY`);
  const url = values.url ?? env.DSS_URL ?? 'http://localhost:3000';
  const { ImportError } = await import('src/cli/documents-import.js');
  const { exportDataset, importDataset } = await import('src/cli/dataset-transfer.js');
  try {
    print(
      command === 'export'
        ? await exportDataset({ url, apiKey, datasetId: argument, out: values.out! })
        : await importDataset({ url, apiKey, path: argument, name: values.name }),
    );
    return 0;
  } catch (error) {
    if (!(error instanceof ImportError)) throw error;
    process.stderr.write(`${JSON.stringify({ error: error.message, code: error.code })}\n`);
    return 1;
  }
}

async function runUsers(
  users: UsersService,
  command: string,
  userId: string | undefined,
  values: { account?: string; email?: string; role?: string; name?: string },
  redisReady: () => Promise<void>,
): Promise<void> {
  switch (command) {
    case 'create': {
      if (!values.account || !values.email) throw new UsageError('users create needs --account and --email');
      const password = await readPassword();
      print(
        await users.create({
          account: values.account,
          email: values.email,
          role: values.role,
          displayName: values.name,
          password,
        }),
      );
      return;
    }
    case 'list':
      if (!values.account) throw new UsageError('users list needs --account <name>');
      print({ account: values.account, users: await users.list(values.account) });
      return;
    case 'disable':
      if (!userId) throw new UsageError('users disable needs <user-id>');
      await redisReady(); // the user's sessions are removed from Redis
      await users.disable(userId);
      print({ disabled: userId });
      return;
    case 'set-password': {
      if (!userId) throw new UsageError('users set-password needs <user-id>');
      const password = await readPassword();
      await redisReady();
      print({ user_id: userId, ...(await users.setPassword(userId, password)) });
      return;
    }
    case 'revoke-grants':
      if (!userId) throw new UsageError('users revoke-grants needs <user-id>');
      print({ user_id: userId, ...(await users.revokeGrants(userId)) });
      return;
    default:
      throw new UsageError(`unknown users command "${command}"`);
  }
}

async function runOAuthClients(clients: ClientsService, command: string, clientId: string | undefined) {
  switch (command) {
    case 'list':
      print({
        oauth_clients: (await clients.list()).map((client) => ({
          client_id: client.id,
          client_name: client.name,
          redirect_uris: client.redirectUris,
          token_endpoint_auth_method: client.authMethod,
          created_at: client.createdAt.toISOString(),
        })),
      });
      return;
    case 'delete':
      if (!clientId) throw new UsageError('oauth-clients delete needs <client-id>');
      // Its tokens stop working at once, in every process: each token check reads the client.
      if (!(await clients.delete(clientId))) {
        throw new AppError(404, 'client_not_found', `No OAuth client ${clientId}`, { client_id: clientId });
      }
      print({ deleted: clientId });
      return;
    default:
      throw new UsageError(`unknown oauth-clients command "${command}"`);
  }
}

/**
 * The routes the server serves with this configuration, each with its access rule: read from the
 * controllers' metadata, without connecting to anything. The whole application is loaded only here.
 */
async function listRoutes(config: Configuration, logger: pino.Logger) {
  const [{ AppModule }, { routeTable }, { ROUTE_ACCESS }] = await Promise.all([
    import('src/app.module.js'),
    import('src/common/http/route-table.js'),
    import('src/modules/auth/auth.decorators.js'),
  ]);
  const routes = await routeTable(AppModule.forRoot(config, logger));
  return routes.map(({ method, path, controller, handler }) => ({
    method,
    path,
    controller,
    access: Reflect.getMetadata(ROUTE_ACCESS, handler) as unknown,
  }));
}

/**
 * The password given on standard input (its first line), or undefined to have one generated: when
 * standard input is a terminal (it would echo what is typed) or empty.
 */
async function readPassword(): Promise<string | undefined> {
  if (process.stdin.isTTY) return undefined;
  let input = '';
  for await (const chunk of process.stdin) input += String(chunk);
  const line = input.split(/\r?\n/)[0];
  return line === '' ? undefined : line;
}

/** The shared Redis client connects in the background; a command that writes to it waits for it. */
async function redisReady(redis: Redis): Promise<void> {
  if (redis.isReady) return;
  await new Promise<void>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error('Redis is not reachable at REDIS_URL')), 5_000);
    redis.once(readyEvent(redis), () => {
      clearTimeout(timer);
      resolve();
    });
  });
}

run(process.argv.slice(2)).then(
  (code) => process.exit(code ?? 0),
  (error: unknown) => {
    if (error instanceof UsageError) {
      process.stderr.write(`${error.message}\n\n${USAGE}\n`);
      process.exit(2);
    }
    if (error instanceof ConfigError || error instanceof AppError) {
      process.stderr.write(
        `${JSON.stringify({ error: error.message, code: error instanceof AppError ? error.code : 'invalid_config' })}\n`,
      );
      process.exit(1);
    }
    process.stderr.write(`${error instanceof Error ? (error.stack ?? error.message) : String(error)}\n`);
    process.exit(1);
  },
);
