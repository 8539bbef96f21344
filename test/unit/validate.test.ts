import { describe, expect, it } from 'vitest';
import { checkInt, checkOptions, checkSize, describe as describeValue } from '../../lib/core/validate.js';

describe('validate', () => {
  it('describes received values', () => {
    expect(describeValue(3.5)).toBe('3.5 of type number');
    expect(describeValue('ab')).toBe("'ab' of type string");
    expect(describeValue(5n)).toBe('5n of type bigint');
    expect(describeValue(null)).toBe('null');
    expect(describeValue(new Float32Array(1))).toBe('an object of type Float32Array');
  });

  it('uses one message format: TypeError for types, RangeError for ranges', () => {
    expect(() => checkSize('byteLength', '4')).toThrow(
      new TypeError("Expected a non-negative integer for byteLength but received '4' of type string"),
    );
    expect(() => checkSize('byteLength', -1)).toThrow(
      new RangeError('Expected a non-negative integer for byteLength but received -1 of type number'),
    );
    expect(() => checkInt('x', 11, 0, 10)).toThrow(RangeError);
    expect(checkSize('n', 0)).toBe(0);
  });

  it('rejects unknown option keys so typos do not pass silently', () => {
    expect(() => checkOptions('options', { strem: 1 }, ['stream'] as const)).toThrow(
      /Unknown option options.strem; known options: stream/,
    );
    expect(checkOptions('options', undefined, ['stream'] as const)).toEqual({});
  });
});
