import { Global, Module } from '@nestjs/common';
import { TypeOrmModule } from '@nestjs/typeorm';
import { APP_CONFIG, type AppConfig } from 'src/config/app-config.js';
import { dataSourceOptions } from 'src/database/data-source.js';
import { TransactionRunner } from 'src/database/transaction.js';

/** The main connection pool of the process; repositories inject the DataSource (searches have their own: SearchPool). */
@Global()
@Module({
  imports: [
    TypeOrmModule.forRootAsync({
      inject: [APP_CONFIG],
      useFactory: (config: AppConfig) => ({
        ...dataSourceOptions(config),
        // The process has reached its database at start (checkDatabaseConnection): a failure here is
        // not one that Nest's default 27 s of retries would mend, and a restart is the retry.
        retryAttempts: 1,
      }),
    }),
  ],
  providers: [TransactionRunner],
  exports: [TransactionRunner],
})
export class DatabaseModule {}
