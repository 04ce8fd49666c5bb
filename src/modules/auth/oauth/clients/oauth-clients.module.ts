import { Module } from '@nestjs/common';
import { ClientsRepository } from 'src/modules/auth/oauth/clients/clients.repository.js';
import { ClientsService } from 'src/modules/auth/oauth/clients/clients.service.js';

/** Registered OAuth clients: for the authorization server, and for the command line that lists and deletes them. */
@Module({ providers: [ClientsRepository, ClientsService], exports: [ClientsService] })
export class OAuthClientsModule {}
