import {
  MASK,
  MissingParamError,
  maskSecrets,
  substitute,
  substituteDeep,
  templateParams
} from './template';

const params = [
  { name: 'image', value: 'bert:v1', secret: false },
  { name: 'token', value: 's3cr3t', secret: true }
];

describe('template', () => {
  it('lists params once, in order', () => {
    expect(templateParams('${b} ${a} ${b} $x')).toEqual(['b', 'a']);
  });
  it('substitutes, keeping $${escaped}', () => {
    expect(substitute('run ${image} --t ${token} $${image}', params)).toBe(
      'run bert:v1 --t s3cr3t ${image}'
    );
  });
  it('masks secret values when asked', () => {
    expect(substitute('T=${token}', params, { mask: true })).toBe(`T=${MASK}`);
    expect(maskSecrets('env: s3cr3t here', params)).toBe(`env: ${MASK} here`);
  });
  it('reports every missing param', () => {
    try {
      substitute('${a} ${b} ${a}', params);
      fail('should throw');
    } catch (e) {
      expect(e).toBeInstanceOf(MissingParamError);
      expect((e as MissingParamError).names).toEqual(['a', 'b']);
    }
  });
  it('substitutes deep inside a spec', () => {
    const spec = { image: '${image}', env: { TOKEN: '${token}' }, nodes: 4 };
    expect(substituteDeep(spec, params)).toEqual({
      image: 'bert:v1',
      env: { TOKEN: 's3cr3t' },
      nodes: 4
    });
  });
});
