/// What one `LogOperation` is for: one request, of a new claim or of a part of a refused batch.
enum OperationWork: Sendable {
    /// Claim the oldest records of a class within the grant's limits when the queue starts the operation, and
    /// send them.
    case claim(PriorityClass, UploadRateLimiter.Grant)
    /// Send a part of a refused batch, claimed already.
    case send(BatchPart)

    var priorityClass: PriorityClass {
        switch self {
        case .claim(let priorityClass, _): priorityClass
        case .send(let part): part.batch.priority
        }
    }
}
