import { Module } from '@nestjs/common';
import { GrantsRepository } from 'src/modules/auth/oauth/grants.repository.js';

/**
 * People's consents to OAuth clients and the tokens issued from them: for the authorization server,
 * and for the users module, which revokes a person's grants when they are disabled or change their
 * password.
 */
@Module({ providers: [GrantsRepository], exports: [GrantsRepository] })
export class OAuthGrantsModule {}
