import { Module } from '@nestjs/common';
import { DatasetsModule } from 'src/modules/datasets/datasets.module.js';
import { DocumentsModule } from 'src/modules/documents/documents.module.js';
import { McpController } from 'src/modules/mcp/mcp.controller.js';
import { McpRepository } from 'src/modules/mcp/mcp.repository.js';
import { McpService } from 'src/modules/mcp/mcp.service.js';
import { SearchModule } from 'src/modules/search/search.module.js';

/** The remote MCP server: the service's search and documents as tools for agents (docs/mcp.md). */
@Module({
  imports: [DatasetsModule, DocumentsModule, SearchModule],
  controllers: [McpController],
  providers: [McpService, McpRepository],
})
export class McpModule {}
