/** An error the server described as `{message, reason, field, fix}` (`components/schemas/Error`). */
export class RanktableAPIError extends Error {
  constructor(
    message: string,
    readonly status: number,
    readonly reason: string,
    readonly field: string | null,
    readonly fix: string | null = null
  ) {
    super(message);
  }
}
