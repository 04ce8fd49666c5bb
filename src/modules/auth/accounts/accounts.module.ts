import { Module } from '@nestjs/common';
import { AccountsRepository } from 'src/modules/auth/accounts/accounts.repository.js';

/** Accounts, which own everything: API keys and users are created in one, named on the command line. */
@Module({ providers: [AccountsRepository], exports: [AccountsRepository] })
export class AccountsModule {}
