/// Checks FIFO order across requests that may overlap: each request's numbers ascend, and every number in a
/// request is below every number in requests that arrived `window` or more requests later (requests closer than
/// that may have been in flight together). Returns the pairs that break it; zero for FIFO.
func fifoViolations(_ requests: [[Int]], window: Int) -> Int {
    var violations = requests.count { $0 != $0.sorted() }
    let nonEmpty = requests.filter { !$0.isEmpty }
    for (index, request) in nonEmpty.enumerated() {
        let highest = request.max()!
        for later in nonEmpty.dropFirst(index + window) where later.min()! < highest {
            violations += 1
        }
    }
    return violations
}
