import { Module } from '@nestjs/common';
import { TypeOrmModule } from '@nestjs/typeorm';
import { AccountsModule } from 'src/modules/auth/accounts/accounts.module.js';
import { ApiKeyCache } from 'src/modules/auth/api-keys/api-key-cache.js';
import { ApiKeyEntity } from 'src/modules/auth/api-keys/api-key.entity.js';
import { ApiKeysRepository } from 'src/modules/auth/api-keys/api-keys.repository.js';
import { ApiKeysService } from 'src/modules/auth/api-keys/api-keys.service.js';

/** The API keys of accounts: the API-key tier's verifier, and the command line's keys. */
@Module({
  imports: [AccountsModule, TypeOrmModule.forFeature([ApiKeyEntity])],
  providers: [ApiKeysRepository, ApiKeysService, ApiKeyCache],
  exports: [ApiKeysService],
})
export class ApiKeysModule {}
