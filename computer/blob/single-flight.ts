/**
 * Single flight: while a computation for `key` runs, every caller asking for `key` gets its
 * promise instead of starting another (one hash, one derivation per content signature however
 * many requests arrive at once). The entry goes when the computation settles.
 */
export function shareFlight<T>(
  flights: Map<string, Promise<T>>,
  key: string,
  start: () => Promise<T>,
): Promise<T> {
  const running = flights.get(key);
  if (running !== undefined) return running;
  const flight = start();
  flights.set(key, flight);
  const clear = (): void => {
    if (flights.get(key) === flight) flights.delete(key);
  };
  flight.then(clear, clear);
  return flight;
}
