import { csvField, toCsv } from './csv';

describe('csv', () => {
  it('quotes every field', () => {
    expect(csvField('a')).toBe('"a"');
    expect(csvField(3)).toBe('"3"');
    expect(csvField(null)).toBe('""');
  });
  it('escapes the quote and the escape character itself', () => {
    expect(csvField('say "hi"')).toBe('"say \\"hi\\""');
    expect(csvField('C:\\path')).toBe('"C:\\\\path"');
    expect(csvField('\\"')).toBe('"\\\\\\""');
  });
  it('honours custom quote and escape characters', () => {
    expect(csvField("it's", { quote: "'", escape: '\\' })).toBe("'it\\'s'");
    expect(csvField('a"b', { quote: '"', escape: '"' })).toBe('"a""b"');
  });
  it('keeps separators and newlines inside quoted fields', () => {
    const text = toCsv(['pod', 'text'], [['p-0', 'a,b\nc']]);
    expect(text).toBe('"pod","text"\r\n"p-0","a,b\nc"\r\n');
  });
});
