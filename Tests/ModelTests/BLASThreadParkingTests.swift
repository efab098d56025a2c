@testable import Model
import Testing

/// A decoding step parks OpenBLAS at one thread (its workers would spin beside the decode team) while the process
/// keeps its count for the team and for the next pass that holds it.
@Test func aDecodingStepParksOpenBLASAtOneThreadAndTheNextPassRunsAtTheProcessCount() {
    // The outer hold keeps other tests' counts out meanwhile, and puts the count back after.
    BLAS.withThreadCount(2) {
        BLAS.withWorkersParked {
            #expect(BLAS.openBLASThreads == 1)
            #expect(BLAS.threads == 2)
            #expect(BLAS.withThreadCount(1) { BLAS.threads } == 1)
        }
        #expect(BLAS.openBLASThreads == 1, "left parked for the next decoding step")
        #expect(BLAS.threads == 2)
        #expect(BLAS.withThreadCount { BLAS.openBLASThreads } == 2)
        #expect(BLAS.openBLASThreads == 1)
        BLAS.withWorkersParked { #expect(BLAS.threads == 2) }
    }
}

@Test func settingTheCountEndsAParking() {
    BLAS.withThreadCount(2) {
        let saved = BLAS.threads
        BLAS.withWorkersParked {}
        BLAS.threads = 3
        #expect(BLAS.openBLASThreads == 3 && BLAS.threads == 3)
        BLAS.threads = saved
    }
}
