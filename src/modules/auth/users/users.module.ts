import { Module } from '@nestjs/common';
import { TypeOrmModule } from '@nestjs/typeorm';
import { AccountsModule } from 'src/modules/auth/accounts/accounts.module.js';
import { OAuthGrantsModule } from 'src/modules/auth/oauth/grants/oauth-grants.module.js';
import { SessionStoreModule } from 'src/modules/auth/sessions/store/session-store.module.js';
import { UserEntity } from 'src/modules/auth/users/user.entity.js';
import { UsersRepository } from 'src/modules/auth/users/users.repository.js';
import { UsersService } from 'src/modules/auth/users/users.service.js';

/**
 * The people of each account, for the command line and for signing in. Disabling a user or changing
 * their password ends their sessions and revokes their OAuth grants, through the stores' owners.
 */
@Module({
  imports: [AccountsModule, SessionStoreModule, OAuthGrantsModule, TypeOrmModule.forFeature([UserEntity])],
  providers: [UsersRepository, UsersService],
  exports: [UsersRepository, UsersService],
})
export class UsersModule {}
