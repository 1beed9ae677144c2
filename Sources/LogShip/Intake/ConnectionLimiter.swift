/// Decides what a stream socket does with each connection: serve it, hold it unread, or refuse it; at most
/// `maximum` served at once in all, at most `maximumPerUser` from one user (uid), so that one user's processes,
/// however many it forks, can neither exhaust the daemon's file descriptors nor crowd out every other producer.
///
/// A connection over its user's cap is held, up to `maximumHeld` at once: the daemon does not read it, so its
/// writer blocks once the socket's buffer is full, and it is served as soon as one of its user's connections
/// ends (the oldest held first). One that cannot be held, or whose hold ends (``expire(_:)``), is refused. A
/// refused connection keeps its place until it is released, so the caller, which accepts nothing while
/// ``hasRoom`` is false, never has more than `maximum + maximumHeld` connections.
///
/// On the control socket a few places are kept for operators (root and logshipd's own user): other users are
/// refused once only `operatorReserve` places are left, and an operator may hold that many more than the per-user
/// cap, so that `logctl status` still gets in while another user holds every place it may.
///
/// A pure value: the listener holds it in a lock and acts on what it decides.
struct ConnectionLimiter: Sendable {
    /// What to do with a new connection.
    enum Admission: Equatable, Sendable {
        case serve
        /// Keep it unread until ``release(_:)`` promotes it or ``expire(_:)`` refuses it.
        case hold
        /// Refuse it: it still takes a place until ``release(_:)``.
        case refuse(ConnectionRefusal)
    }

    /// What a connection the limiter knows is to the daemon now.
    enum Role: Equatable, Sendable {
        case served
        case held
        case refused
    }

    let maximum: Int
    let maximumPerUser: Int
    let maximumHeld: Int
    let operatorReserve: Int
    let operators: Set<UInt32>

    private var connections: [Int: (uid: UInt32, role: Role)] = [:]
    private var servedPerUser: [UInt32: Int] = [:]
    /// Held connections per user, oldest first.
    private var heldPerUser: [UInt32: [Int]] = [:]
    private(set) var served = 0
    private(set) var held = 0

    /// - Parameters:
    ///   - maximumHeld: How many connections over their user's cap may wait unread at once; 0 refuses them.
    ///   - operatorReserve: Places only `operators` may take; 0 treats every user alike.
    init(
        maximum: Int, maximumPerUser: Int, maximumHeld: Int = 0, operatorReserve: Int = 0, operators: Set<UInt32> = []
    ) {
        precondition(maximum > 0 && maximumPerUser > 0 && maximumHeld >= 0 && operatorReserve >= 0)
        self.maximum = maximum
        self.maximumPerUser = maximumPerUser
        self.maximumHeld = maximumHeld
        self.operatorReserve = min(operatorReserve, maximum - 1)
        self.operators = operators
    }

    /// Whether a new connection, of any user, can be served, held or refused within the places.
    var hasRoom: Bool { served < maximum && connections.count < maximum + maximumHeld }

    /// The role of connection `id`, if it has a place.
    func role(of id: Int) -> Role? { connections[id]?.role }

    /// Gives connection `id`, from user `uid`, a place and decides what it is to the daemon.
    mutating func admit(_ id: Int, uid: UInt32) -> Admission {
        let isOperator = operators.contains(uid)
        let places = isOperator ? maximum : maximum - operatorReserve
        let userPlaces = isOperator ? maximumPerUser + operatorReserve : maximumPerUser
        let fromUser = servedPerUser[uid, default: 0]
        let admission: Admission
        if served < places && fromUser < userPlaces {
            admission = .serve
            served += 1
            servedPerUser[uid] = fromUser + 1
            connections[id] = (uid, .served)
        } else if held < maximumHeld {
            admission = .hold
            held += 1
            heldPerUser[uid, default: []].append(id)
            connections[id] = (uid, .held)
        } else {
            admission = .refuse(fromUser >= userPlaces ? .userCap : .connectionCap)
            connections[id] = (uid, .refused)
        }
        return admission
    }

    /// Frees the place of connection `id` once it has closed; returns the held connection of the same user that
    /// is served from now on in its stead, if any.
    mutating func release(_ id: Int) -> Int? {
        guard let (uid, role) = connections.removeValue(forKey: id) else { return nil }
        switch role {
        case .refused:
            return nil
        case .held:
            removeHeld(id, of: uid)
            return nil
        case .served:
            guard let promoted = heldPerUser[uid]?.first else {
                served -= 1
                servedPerUser[uid] = servedPerUser[uid, default: 1] > 1 ? servedPerUser[uid, default: 1] - 1 : nil
                return nil
            }
            removeHeld(promoted, of: uid)
            connections[promoted] = (uid, .served)
            return promoted
        }
    }

    /// Ends the hold of connection `id`: it is refused from now on. Returns whether it was still held (not served
    /// or released meanwhile).
    mutating func expire(_ id: Int) -> Bool {
        guard let (uid, role) = connections[id], role == .held else { return false }
        removeHeld(id, of: uid)
        connections[id] = (uid, .refused)
        return true
    }

    private mutating func removeHeld(_ id: Int, of uid: UInt32) {
        held -= 1
        heldPerUser[uid]?.removeAll { $0 == id }
        if heldPerUser[uid]?.isEmpty == true { heldPerUser[uid] = nil }
    }
}
