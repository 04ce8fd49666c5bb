import { Global, Module } from '@nestjs/common';
import { TypeOrmModule } from '@nestjs/typeorm';
import { DATABASE_CONFIG, type DatabaseConfig } from 'src/database/database.config.js';
import { dataSourceOptions } from 'src/database/data-source.js';
import { TransactionRunner } from 'src/database/transaction.js';

/** The main connection pool of the process; repositories inject the DataSource (searches have their own: SearchPool). */
@Global()
@Module({
  imports: [
    TypeOrmModule.forRootAsync({
      inject: [DATABASE_CONFIG],
      // Entities come from the modules that own them (`TypeOrmModule.forFeature`); migrations need none.
      useFactory: (config: DatabaseConfig) => ({ ...dataSourceOptions(config), autoLoadEntities: true }),
    }),
  ],
  providers: [TransactionRunner],
  exports: [TransactionRunner],
})
export class DatabaseModule {}
