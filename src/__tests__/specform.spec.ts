import {
  emptyForm,
  fieldOfIssue,
  formToSpec,
  specToForm,
  splitArgs
} from '../specform';

describe('specform', () => {
  it('maps a form to a spec and back', () => {
    const form = {
      ...emptyForm(),
      name: 'bert',
      image: 'bert:v1',
      nodes: '4',
      command: 'python train.py --epochs 3',
      env: 'A=1\n# comment\nB=x=y',
      routing: true
    };
    const { spec, errors } = formToSpec(form);
    expect(errors).toEqual({});
    expect(spec.nodes).toBe(4);
    expect(spec.command).toEqual([
      '/bin/bash',
      '-c',
      'python train.py --epochs 3'
    ]);
    expect(spec.env).toEqual({ A: '1', B: 'x=y' });
    const back = specToForm(spec);
    expect(back.command).toBe(form.command);
    expect(back.nodes).toBe('4');
    expect(back.routing).toBe(true);
    expect(back.env).toBe('A=1\nB=x=y');
  });
  it('gives field-local errors as you type', () => {
    const { errors } = formToSpec({
      ...emptyForm(),
      nodes: 'four',
      env: 'NOEQUALS'
    });
    expect(errors.nodes).toMatch(/whole number/);
    expect(errors.env).toMatch(/line 1/);
  });
  it('maps entry points', () => {
    const { spec } = formToSpec({
      ...emptyForm(),
      mode: 'entry',
      script: 'train.py',
      args: '--lr 0.1 "a b"'
    });
    expect(spec.entry).toEqual({
      script: 'train.py',
      args: ['--lr', '0.1', 'a b']
    });
    expect(specToForm(spec).args).toBe('--lr 0.1 "a b"');
  });
  it('splits quoted args', () => {
    expect(splitArgs(`a 'b c' "d \\" e"`)).toEqual(['a', 'b c', 'd " e']);
  });
  it('maps server issue paths to fields', () => {
    expect(fieldOfIssue('spec.nodes')).toBe('nodes');
    expect(fieldOfIssue('spec.env.FOO')).toBe('env');
    expect(fieldOfIssue('spec.volumes[0].name')).toBe('volumes');
    expect(fieldOfIssue('spec.entry.script')).toBe('script');
    expect(fieldOfIssue(null)).toBe('');
  });
});
