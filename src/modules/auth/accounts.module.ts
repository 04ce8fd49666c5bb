import { Module } from '@nestjs/common';
import { AccountsRepository } from 'src/modules/auth/accounts.repository.js';

@Module({ providers: [AccountsRepository], exports: [AccountsRepository] })
export class AccountsModule {}
