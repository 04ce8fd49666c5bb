import 'reflect-metadata';
import { parseArgs } from 'node:util';
import { type DynamicModule, Module } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import { pino } from 'pino';
import { AppError } from 'src/common/errors/app-error.js';
import { LoggingModule } from 'src/common/logging/logging.module.js';
import { ConfigError, loadConfig, type AppConfig } from 'src/config/app-config.js';
import { ConfigModule } from 'src/config/config.module.js';
import { DatabaseModule } from 'src/database/database.module.js';
import { migrate } from 'src/database/migrate.js';
import { checkLexemeTable } from 'src/modules/chunk-index/lexeme-source.js';
import { ApiKeysModule } from 'src/modules/auth/api-keys.module.js';
import { ApiKeysService } from 'src/modules/auth/api-keys.service.js';
import { EmbeddingsModule } from 'src/modules/embeddings/embeddings.module.js';
import { ReembedService } from 'src/modules/embeddings/reembed.service.js';

const USAGE = `Usage:
  node dist/cli.js migrate
  node dist/cli.js api-keys create --account <name>
  node dist/cli.js api-keys list --account <name>
  node dist/cli.js api-keys revoke <key-id>
  node dist/cli.js datasets reembed <dataset-id>


Every command prints one JSON line on stdout. Configuration comes from the same environment as the server.`;

class UsageError extends Error {}

@Module({})
class CliModule {
  /** The embedding model is loaded only for the commands that embed. */
  static forRoot(config: AppConfig, logger: pino.Logger, options: { embedding: boolean }): DynamicModule {
    return {
      module: CliModule,
      imports: [
        ConfigModule.forRoot(config),
        LoggingModule.forRoot(logger),
        DatabaseModule,
        ApiKeysModule,
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
      options: { account: { type: 'string' }, help: { type: 'boolean', short: 'h' } },
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

async function run(argv: string[]): Promise<void> {
  const { positionals, values } = parse(argv);
  if (values.help) {
    process.stdout.write(`${USAGE}\n`);
    return;
  }
  const config = loadConfig();
  // Logs go to stderr so that stdout carries only the command's JSON.
  const logger = pino({ level: config.logLevel === 'silent' ? 'silent' : 'warn' }, pino.destination(2));
  const [group, command, argument] = positionals;

  if (group === 'migrate' && command === undefined) {
    checkLexemeTable();
    print({ applied: await migrate(config, logger) });
    return;
  }
  if (!['api-keys', 'datasets'].includes(group) || !command) throw new UsageError('unknown command');

  const context = await NestFactory.createApplicationContext(
    // The command line answers no searches: like a worker, it needs no query-embedding thread.
    CliModule.forRoot({ ...config, role: 'worker' }, logger, { embedding: group === 'datasets' }),
    { logger: false },
  );
  try {
    if (group === 'datasets') {
      if (command !== 'reembed' || !argument) throw new UsageError('datasets reembed needs <dataset-id>');
      print(await context.get(ReembedService).reembed(argument));
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

run(process.argv.slice(2)).then(
  () => process.exit(0),
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
