import AdaptCore
import Adapters
import Evaluation
import Model
import Registry
import ReplayBuffer
import Storage
import Training

/// Whether another attempt can fix what a step body threw.
///
/// A step computes deterministically from its recorded inputs, so what its inputs or files make impossible (an
/// empty training set, a malformed model or adapter, a configuration out of range, a loss that diverges, a base
/// model that changed since the run was enqueued) fails the same way on every attempt: the step is discarded at
/// once with its reason instead of spending minutes of backoff on the same answer, and the reason says what to do
/// before `adapt retry`. What the machine or the moment causes (a file that could not be read or written, a
/// busy or unreachable database, a full disk, threads that did not start, a race with another writer) is retried.
/// An error of a type this list does not know is retried: an unknown failure may be a passing one.
public enum StepFailure {
    public static func isRetryable(_ error: any Error) -> Bool {
        switch error {
        case let error as StepError:
            return error.isRetryable
        case let error as TrainingError:
            if case .io = error { return true }
            return false
        case let error as ModelError:
            switch error {
            case .fileUnreadable, .fileUnwritable, .threadsUnavailable: return true
            default: return false
            }
        case let error as CoreError:
            switch error {
            case .fileUnreadable, .fileUnwritable: return true
            default: return false
            }
        case let error as StorageError:
            switch error {
            case .notADatabase, .damaged, .foreignDatabase, .newerSchema, .olderSchema, .migrationBrokeForeignKeys,
                 .unknownDurability, .missingColumn:
                return false
            default: return true
            }
        case let error as ReplayError:
            switch error {
            case .erasedWhileSnapshotting, .noSpaceToErase: return true
            default: return false
            }
        case is AdapterFileError, is AdapterExchangeError, is ZstdError, is EvaluationError, is RegistryError:
            return false
        default:
            return true
        }
    }
}
