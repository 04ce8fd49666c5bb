import { Module } from '@nestjs/common';
import { GrantRevocationService } from 'src/modules/auth/oauth/grants/grant-revocation.service.js';
import { GrantsRepository } from 'src/modules/auth/oauth/grants/grants.repository.js';

/**
 * People's consents to OAuth clients and the tokens issued from them (`oauth_grants`, `oauth_tokens`):
 * the repository for the authorization server, and GrantRevocationService for the users module, which
 * revokes a person's grants when they are disabled or change their password.
 */
@Module({
  providers: [GrantsRepository, GrantRevocationService],
  exports: [GrantsRepository, GrantRevocationService],
})
export class OAuthGrantsModule {}
