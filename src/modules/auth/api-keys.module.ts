import { Module } from '@nestjs/common';
import { AccountsModule } from 'src/modules/auth/accounts.module.js';
import { ApiKeyCache } from 'src/modules/auth/api-key-cache.js';
import { ApiKeysRepository } from 'src/modules/auth/api-keys.repository.js';
import { ApiKeysService } from 'src/modules/auth/api-keys.service.js';

/** Accounts and their API keys; used by the bearer guard and by the admin command line. */
@Module({
  imports: [AccountsModule],
  providers: [ApiKeysRepository, ApiKeysService, ApiKeyCache],
  exports: [ApiKeysService],
})
export class ApiKeysModule {}
