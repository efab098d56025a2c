import AdaptCore

/// The canary the forgetting guard scores: general prompts the engine ships, each with a right and a wrong reply.
///
/// No user text is in it. The two replies of an item are the same sentence but for the part that is right or
/// wrong, so what a style adapter does to the wording moves both alike and the margin log p(right) − log p(wrong)
/// measures ability: facts, arithmetic, common sense and plain English. A set is never edited once shipped (a
/// run records the name and digest of the set it used, and its replay reads the same set): a new list is a new
/// set with a new name.
public struct CanarySet: Sendable, Equatable {
    public struct Item: Sendable, Equatable {
        public let prompt: String
        public let right: String
        public let wrong: String
    }

    public let name: String
    public let items: [Item]

    /// The SHA-256 of the set's name and items, one `prompt`, `right`, `wrong` triple a line, tab-separated.
    public var digest: Digest {
        Digest.sha256(([name] + items.map { "\($0.prompt)\t\($0.right)\t\($0.wrong)" }).joined(separator: "\n"))
    }

    /// The set new runs use.
    public static let current = v1

    /// Every set the engine ships, by name: a replay reads the one its run recorded.
    public static let all: [CanarySet] = [v1]

    public static func named(_ name: String) -> CanarySet? { all.first { $0.name == name } }

    static func item(_ prompt: String, _ right: String, _ wrong: String) -> Item { Item(prompt: prompt, right: right, wrong: wrong) }

    /// 36 items: 10 facts, 9 sums, 9 everyday physics and common sense, 8 plain English.
    public static let v1 = CanarySet(name: "canary-v1", items: [
        item("What is the capital of France?", "The capital of France is Paris.", "The capital of France is Madrid."),
        item("What is the capital of Japan?", "The capital of Japan is Tokyo.", "The capital of Japan is Beijing."),
        item("How many days are there in a week?", "There are seven days in a week.", "There are nine days in a week."),
        item("How many legs does a spider have?", "A spider has eight legs.", "A spider has six legs."),
        item("Which planet do we live on?", "We live on the planet Earth.", "We live on the planet Mars."),
        item("What colour is the sky on a clear day?", "On a clear day the sky is blue.", "On a clear day the sky is green."),
        item("What do bees make?", "Bees make honey.", "Bees make milk."),
        item("Which ocean lies between Europe and America?", "The Atlantic Ocean lies between them.", "The Indian Ocean lies between them."),
        item("How many months are there in a year?", "There are twelve months in a year.", "There are ten months in a year."),
        item("What is frozen water called?", "Frozen water is called ice.", "Frozen water is called steam."),
        item("What is 2 + 2?", "2 + 2 = 4", "2 + 2 = 5"),
        item("What is 3 + 5?", "3 + 5 = 8", "3 + 5 = 7"),
        item("What is 10 - 4?", "10 - 4 = 6", "10 - 4 = 7"),
        item("What is 6 times 7?", "6 times 7 is 42.", "6 times 7 is 36."),
        item("What is half of 20?", "Half of 20 is 10.", "Half of 20 is 15."),
        item("What is 9 + 1?", "9 + 1 = 10", "9 + 1 = 11"),
        item("What is 100 divided by 10?", "100 divided by 10 is 10.", "100 divided by 10 is 1000."),
        item("Which is larger, 7 or 3?", "7 is larger than 3.", "3 is larger than 7."),
        item("What number comes after 19?", "The number after 19 is 20.", "The number after 19 is 18."),
        item("What happens to ice when it is left in the sun?", "It melts.", "It grows."),
        item("Is fire hot or cold?", "Fire is hot.", "Fire is cold."),
        item("What do you use to cut paper?", "You use scissors to cut paper.", "You use a spoon to cut paper."),
        item("Where does the sun rise?", "The sun rises in the east.", "The sun rises in the west."),
        item("What should you do when you are thirsty?", "You should drink some water.", "You should eat some sand."),
        item("If you drop a glass on a stone floor, what usually happens?", "It usually breaks.", "It usually bounces."),
        item("Do fish live in water or in trees?", "Fish live in water.", "Fish live in trees."),
        item("What do you wear on your feet?", "You wear shoes on your feet.", "You wear hats on your feet."),
        item("When is it dark outside?", "It is dark outside at night.", "It is dark outside at noon."),
        item("What is the opposite of hot?", "The opposite of hot is cold.", "The opposite of hot is tall."),
        item("What is the plural of child?", "The plural of child is children.", "The plural of child is childs."),
        item("What is the past tense of go?", "The past tense of go is went.", "The past tense of go is goed."),
        item("Which word is a colour: red or run?", "Red is a colour.", "Run is a colour."),
        item("What is the opposite of up?", "The opposite of up is down.", "The opposite of up is green."),
        item("Finish the sentence: The cat sat on the", "The cat sat on the mat.", "The cat sat on the sky."),
        item("Which letter comes after A in the alphabet?", "The letter after A is B.", "The letter after A is Q."),
        item("What is a baby dog called?", "A baby dog is called a puppy.", "A baby dog is called a kitten."),
    ])
}
