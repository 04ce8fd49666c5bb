import 'reflect-metadata';
import { createServer, type RequestListener } from 'node:http';
import type { NestExpressApplication } from '@nestjs/platform-express';
import { createApp } from 'src/app.factory.js';
import { startupFailure } from 'src/common/errors/startup-failure.js';
import { NestFactory } from '@nestjs/core';
import { AppModule } from 'src/app.module.js';
import { configureListener } from 'src/common/http/http-listener.js';
import { createLogger, PinoNestLogger } from 'src/common/logging/logger.js';
import { ConfigError } from 'src/config/define.js';
import { type Configuration, loadConfiguration } from 'src/configuration.js';
import { checkDatabaseConnection } from 'src/database/connection-check.js';
import { migrate } from 'src/database/migrate.js';
import { checkLexemeTable } from 'src/modules/chunk-index/lexeme-source.js';
import type { Logger } from 'pino';

/**
 * When the app terminates TLS itself, a plain-HTTP listener serves the same app, whose https redirect
 * (app.factory.ts) answers every request but the probes: one place decides where a redirect may go.
 */
function startHttpRedirect(
  app: NestExpressApplication,
  config: Configuration,
  port: number,
  logger: Logger,
): void {
  const server = createServer(app.getHttpAdapter().getInstance() as RequestListener);
  configureListener(server, { limits: config.http, logger, secure: false });
  app.getHttpServer().once('close', () => {
    server.close();
    server.closeAllConnections();
  });
  server.listen(port, () => logger.info({ port }, 'redirecting plain HTTP to HTTPS'));
}

async function bootstrap(): Promise<void> {
  let config: Configuration;
  try {
    config = loadConfiguration(process.env);
  } catch (error) {
    if (!(error instanceof ConfigError)) throw error;
    process.stderr.write(`${error.message}\n`);
    process.exit(78); // EX_CONFIG
  }
  const logger = createLogger(config.logging);
  checkLexemeTable();
  await checkDatabaseConnection(config.database);
  if (config.core.migrateOnBoot) await migrate(config.database, logger);

  if (config.core.role === 'worker') {
    const worker = await NestFactory.createApplicationContext(AppModule.forRoot(config, logger), {
      logger: new PinoNestLogger(logger),
    });
    worker.enableShutdownHooks();
    logger.info('worker started (ROLE=worker): processing documents, no HTTP');
    return;
  }

  const app = await createApp(config, logger);
  configureListener(app.getHttpServer(), {
    limits: config.http,
    logger,
    secure: config.core.tls !== null,
  });
  await app.listen(config.core.port);
  logger.info({ port: config.core.port, tls: Boolean(config.core.tls) }, 'listening');
  if (config.core.tls?.httpRedirectPort)
    startHttpRedirect(app, config, config.core.tls.httpRedirectPort, logger);
}

bootstrap().catch((error: unknown) => {
  process.stderr.write(startupFailure(error));
  process.exit(1);
});
