import { Module } from '@nestjs/common';
import { AccountsModule } from 'src/modules/auth/accounts/accounts.module.js';
import { OAuthGrantsModule } from 'src/modules/auth/oauth/grants/oauth-grants.module.js';
import { SessionStore } from 'src/modules/auth/sessions/session-store.js';
import { UsersRepository } from 'src/modules/auth/users/users.repository.js';
import { UsersService } from 'src/modules/auth/users/users.service.js';

/**
 * The people of each account, for the command line and for signing in. It holds the session store
 * too: disabling a user or changing their password ends their sessions, and revokes their grants.
 */
@Module({
  imports: [AccountsModule, OAuthGrantsModule],
  providers: [UsersRepository, UsersService, SessionStore],
  exports: [UsersRepository, UsersService, SessionStore],
})
export class UsersModule {}
