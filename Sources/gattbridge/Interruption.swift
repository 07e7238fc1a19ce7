import UnixSignals

/// Runs a command's body so that SIGINT/SIGTERM cancel it instead of killing the process: the body still gets to
/// clean up (stop discovery, unsubscribe, disconnect what it connected) before the process exits. A body that
/// finishes despite the cancellation (scan, listen) returns its value with `interrupted` set.
enum Interruption {
    private enum Child<T: Sendable>: Sendable {
        case body(Result<T, CLIFailure>)
        case signal
        case signalWatchEnded
    }

    static func run<T: Sendable>(
        _ body: @escaping @Sendable () async throws(CLIFailure) -> T
    ) async throws(CLIFailure) -> (value: T, interrupted: Bool) {
        // Trapped before the body starts, so a signal during connecting is already ours.
        let signals = await UnixSignalsSequence(trapping: .sigint, .sigterm)
        let (result, interrupted) = await withTaskGroup(of: Child<T>.self) { group in
            group.addTask {
                do throws(CLIFailure) {
                    return .body(.success(try await body()))
                } catch {
                    return .body(.failure(error))
                }
            }
            group.addTask {
                for await _ in signals { return .signal }
                return .signalWatchEnded
            }
            var bodyResult: Result<T, CLIFailure>?
            var interrupted = false
            while let next = await group.next() {
                switch next {
                case .body(let result):
                    bodyResult = result
                    group.cancelAll()           // ends the signal watcher
                case .signal:
                    interrupted = true
                    group.cancelAll()           // cancels the body; the loop waits for its cleanup
                case .signalWatchEnded:
                    break
                }
            }
            return (bodyResult!, interrupted)
        }
        switch result {
        case .success(let value):
            return (value, interrupted)
        case .failure(let failure):
            // A failure caused by the cancellation is just the interruption.
            throw interrupted ? CLIFailure(ExitStatus.interrupted, "interrupted") : failure
        }
    }
}
