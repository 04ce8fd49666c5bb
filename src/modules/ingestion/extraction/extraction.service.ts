import { Injectable } from '@nestjs/common';
import { type ExtractedText } from 'src/modules/ingestion/extraction/extracted-text.js';
import type { DocumentKind } from 'src/modules/ingestion/extraction/file-kinds.js';
import { OcrService } from 'src/modules/ingestion/extraction/ocr.service.js';
import { extractDocx, extractPdf, extractPptx } from 'src/modules/ingestion/extraction/office.extractor.js';
import {
  extractCsv,
  extractJson,
  extractXml,
  extractYaml,
} from 'src/modules/ingestion/extraction/structured.extractor.js';
import { decodeText, stripControlCharacters } from 'src/modules/ingestion/extraction/text-decoding.js';

/** The text of a document of any supported kind, organised in sections (pages, slides) for citation. */
@Injectable()
export class ExtractionService {
  constructor(private readonly ocr: OcrService) {}

  async extract(kind: DocumentKind, bytes: Buffer): Promise<ExtractedText> {
    const extracted = await this.extractRaw(kind, bytes);
    return {
      format: extracted.format,
      sections: extracted.sections.map((section) => ({
        ...section,
        text: stripControlCharacters(section.text),
      })),
    };
  }

  private extractRaw(kind: DocumentKind, bytes: Buffer): Promise<ExtractedText> | ExtractedText {
    switch (kind) {
      case 'pdf':
        return extractPdf(bytes);
      case 'docx':
        return extractDocx(bytes);
      case 'pptx':
        return extractPptx(bytes);
      case 'image':
        return this.ocr.extract(bytes);
      case 'csv':
        return extractCsv(decodeText(bytes).text);
      case 'json':
        return extractJson(decodeText(bytes).text);
      case 'xml':
        return extractXml(decodeText(bytes).text);
      case 'yaml':
        return extractYaml(decodeText(bytes).text);
      case 'markdown':
        return { format: 'markdown', sections: [{ text: decodeText(bytes).text }] };
      case 'code':
        return { format: 'code', sections: [{ text: decodeText(bytes).text }] };
      case 'text':
        return { format: 'prose', sections: [{ text: decodeText(bytes).text }] };
    }
  }
}
