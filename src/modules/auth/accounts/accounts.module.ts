import { Module } from '@nestjs/common';
import { TypeOrmModule } from '@nestjs/typeorm';
import { AccountEntity } from 'src/modules/auth/accounts/account.entity.js';
import { AccountsRepository } from 'src/modules/auth/accounts/accounts.repository.js';

/** Accounts, which own everything: API keys and users are created in one, named on the command line. */
@Module({
  imports: [TypeOrmModule.forFeature([AccountEntity])],
  providers: [AccountsRepository],
  exports: [AccountsRepository],
})
export class AccountsModule {}
