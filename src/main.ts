import 'reflect-metadata';
import { createServer, type RequestListener } from 'node:http';
import type { NestExpressApplication } from '@nestjs/platform-express';
import { createApp } from 'src/app.factory.js';
import { startupFailure } from 'src/common/errors/startup-failure.js';
import { NestFactory } from '@nestjs/core';
import { AppModule } from 'src/app.module.js';
import { configureListener } from 'src/common/http/http-listener.js';
import { createLogger, PinoNestLogger } from 'src/common/logging/logger.js';
import { type AppConfig, ConfigError, loadConfig } from 'src/config/app-config.js';
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
  config: AppConfig,
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
  let config: AppConfig;
  try {
    config = loadConfig();
  } catch (error) {
    if (!(error instanceof ConfigError)) throw error;
    process.stderr.write(`${error.message}\n`);
    process.exit(78); // EX_CONFIG
  }
  const logger = createLogger(config);
  checkLexemeTable();
  await checkDatabaseConnection(config);
  if (config.migrateOnBoot) await migrate(config, logger);

  if (config.role === 'worker') {
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
    secure: config.tls !== null,
  });
  await app.listen(config.port);
  logger.info({ port: config.port, tls: Boolean(config.tls) }, 'listening');
  if (config.tls?.httpRedirectPort) startHttpRedirect(app, config, config.tls.httpRedirectPort, logger);
}

bootstrap().catch((error: unknown) => {
  process.stderr.write(startupFailure(error));
  process.exit(1);
});
