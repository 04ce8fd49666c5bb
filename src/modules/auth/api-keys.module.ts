import { Module } from '@nestjs/common';
import { ApiKeysRepository } from 'src/modules/auth/api-keys.repository.js';
import { ApiKeysService } from 'src/modules/auth/api-keys.service.js';

/** Accounts and their API keys; used by the bearer guard and by the admin command line. */
@Module({ providers: [ApiKeysRepository, ApiKeysService], exports: [ApiKeysService] })
export class ApiKeysModule {}
