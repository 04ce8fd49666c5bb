import { Injectable } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import { DataSource } from 'typeorm';
import { newId } from 'src/common/ids/ids.js';
import { AccountEntity } from 'src/modules/auth/accounts/account.entity.js';
import { AccountErrors } from 'src/modules/auth/accounts/accounts.errors.js';

/** Accounts, which the command line names: API keys and users are created in one by its name. */
@Injectable()
export class AccountsRepository {
  constructor(@InjectDataSource() private readonly db: DataSource) {}

  /** The account named `name` (trimmed), created when it does not exist yet (safe under concurrent calls). */
  async findOrCreate(accountName: string): Promise<AccountEntity> {
    const name = accountName.trim();
    if (name.length === 0 || name.length > 200) throw AccountErrors.invalidName();
    await this.db
      .createQueryBuilder()
      .insert()
      .into(AccountEntity)
      .values({ id: newId('acc'), name })
      .orIgnore()
      .execute();
    return this.db.getRepository(AccountEntity).findOneByOrFail({ name });
  }

  /** The account named `name` (trimmed); 404 account_not_found when there is none. */
  async get(accountName: string): Promise<AccountEntity> {
    const account = await this.db.getRepository(AccountEntity).findOneBy({ name: accountName.trim() });
    if (!account) throw AccountErrors.notFound(accountName);
    return account;
  }
}
