"""Word lists that type the entity heuristic's names (person, organisation, location); lowercase.

Small on purpose: a name's type mostly comes from its own words (role titles, "Inc", "University") and
its context (Mr, said); the lists cover what has no such cue (countries, capitals, common first names).
"""

from __future__ import annotations


def _names(text: str) -> frozenset[str]:
    return frozenset(n.strip() for n in text.replace("\n", ",").split(",") if n.strip())


LOCATIONS = _names("""
afghanistan, albania, algeria, andorra, angola, argentina, armenia, australia, austria, azerbaijan, bahamas,
bahrain, bangladesh, barbados, belarus, belgium, belize, benin, bhutan, bolivia, bosnia, botswana, brazil,
brunei, bulgaria, burkina faso, burundi, cambodia, cameroon, canada, chad, chile, china, colombia, congo,
costa rica, croatia, cuba, cyprus, czechia, czech republic, denmark, djibouti, ecuador, egypt, el salvador,
eritrea, estonia, eswatini, ethiopia, fiji, finland, france, gabon, gambia, georgia, germany, ghana, greece,
guatemala, guinea, guyana, haiti, honduras, hungary, iceland, india, indonesia, iran, iraq, ireland, israel,
italy, ivory coast, jamaica, japan, jordan, kazakhstan, kenya, kosovo, kuwait, kyrgyzstan, laos, latvia,
lebanon, lesotho, liberia, libya, lithuania, luxembourg, madagascar, malawi, malaysia, maldives, mali, malta,
mauritania, mauritius, mexico, moldova, monaco, mongolia, montenegro, morocco, mozambique, myanmar, burma,
namibia, nepal, netherlands, new zealand, nicaragua, niger, nigeria, north korea, south korea, korea,
north macedonia, norway, oman, pakistan, palestine, panama, papua new guinea, paraguay, peru, philippines,
poland, portugal, qatar, romania, russia, rwanda, samoa, saudi arabia, senegal, serbia, sierra leone,
singapore, slovakia, slovenia, somalia, south africa, south sudan, spain, sri lanka, sudan, suriname, sweden,
switzerland, syria, taiwan, tajikistan, tanzania, thailand, togo, tonga, tunisia, turkey, türkiye,
turkmenistan, uganda, ukraine, united arab emirates, uae, united kingdom, uk, britain, great britain, england,
scotland, wales, northern ireland, united states, us, u.s, usa, america, uruguay, uzbekistan, vatican,
venezuela, vietnam, yemen, zambia, zimbabwe, greenland, hong kong, macau, puerto rico, gaza, west bank,
crimea, donbas, kashmir, tibet, xinjiang, europe, asia, africa, antarctica, north america, south america,
latin america, middle east, east asia, southeast asia, central asia, balkans, caribbean, scandinavia, arctic,
alabama, alaska, arizona, arkansas, california, colorado, connecticut, delaware, florida, hawaii, idaho,
illinois, indiana, iowa, kansas, kentucky, louisiana, maine, maryland, massachusetts, michigan, minnesota,
mississippi, missouri, montana, nebraska, nevada, new hampshire, new jersey, new mexico, new york,
north carolina, north dakota, ohio, oklahoma, oregon, pennsylvania, rhode island, south carolina,
south dakota, tennessee, texas, utah, vermont, virginia, washington, west virginia, wisconsin, wyoming,
ontario, quebec, british columbia, alberta, bavaria, kabul, algiers, buenos aires, canberra, vienna, baku,
dhaka, minsk, brussels, sarajevo, brasilia, sofia, ottawa, santiago, beijing, bogota, havana, prague,
copenhagen, cairo, tallinn, addis ababa, helsinki, paris, tbilisi, berlin, accra, athens, budapest,
reykjavik, new delhi, delhi, jakarta, tehran, baghdad, dublin, jerusalem, tel aviv, rome, tokyo, amman,
nairobi, kyiv, kiev, riga, beirut, tripoli, vilnius, madrid, mexico city, rabat, kathmandu, amsterdam,
the hague, wellington, managua, abuja, pyongyang, seoul, oslo, islamabad, karachi, lahore, manila, warsaw,
lisbon, doha, bucharest, moscow, riyadh, dakar, belgrade, bratislava, ljubljana, mogadishu, pretoria,
johannesburg, cape town, khartoum, stockholm, bern, geneva, zurich, damascus, taipei, bangkok, ankara,
istanbul, kampala, london, caracas, hanoi, sanaa, lusaka, harare, los angeles, san francisco, chicago,
houston, boston, seattle, miami, atlanta, dallas, denver, detroit, philadelphia, phoenix, las vegas,
silicon valley, toronto, montreal, vancouver, sydney, melbourne, mumbai, bangalore, bengaluru, chennai,
kolkata, shanghai, shenzhen, guangzhou, wuhan, osaka, kyoto, munich, frankfurt, hamburg, cologne, milan,
naples, barcelona, marseille, lyon, manchester, liverpool, birmingham, glasgow, edinburgh, belfast, cardiff,
rotterdam, antwerp, st petersburg, kharkiv, odesa, odessa, mariupol, rafah, khan younis, dubai, abu dhabi,
lagos, kinshasa, dar es salaam, casablanca, tunis, sao paulo, rio de janeiro, lima, quito, montevideo,
kuala lumpur, ho chi minh city, brooklyn, manhattan, queens, bronx, westminster, gaza city, sinai, golan
""")

# Words that make a name an organisation: "Acme Inc", "University of X", "Labour Party".
ORG_WORDS = _names("""
inc, inc., corp, corp., corporation, co, co., company, ltd, ltd., llc, plc, gmbh, ag, sa, group, holdings,
bank, university, college, institute, institution, school, academy, foundation, association, agency,
department, ministry, council, committee, commission, party, parliament, congress, senate, court,
police, army, navy, force, forces, union, network, news, times, post, journal, club, fc, league,
federation, organization, organisation, authority, board, bureau, office, service, services, systems,
technologies, technology, labs, studios, records, airlines, airways, motors, pharmaceuticals, partners,
capital, fund, trust, society, center, centre, hospital, church, assembly, cabinet, government, reserve,
exchange, media, press, broadcasting, television, radio, games, software, project, alliance, coalition,
brigade, brigades, movement, front, guard, command, administration, consortium, cooperative, power,
electric, energy, oil, petroleum, telecom, communications, railways, railway, insurance, industries
""")

# Organisations without such a word that the news names most.
KNOWN_ORGS = _names("""
google, alphabet, apple, microsoft, amazon, meta, facebook, instagram, whatsapp, openai, anthropic,
nvidia, intel, amd, ibm, oracle, samsung, sony, tesla, spacex, twitter, x corp, netflix, disney, uber,
airbnb, spotify, youtube, tiktok, bytedance, huawei, alibaba, tencent, baidu, xiaomi, boeing, airbus,
toyota, volkswagen, bmw, ford, general motors, pfizer, moderna, walmart, reuters, bloomberg,
associated press, bbc, cnn, nasa, esa, fbi, cia, nsa, un, united nations, eu, european union, nato,
who, imf, world bank, opec, hamas, hezbollah, taliban, kremlin, pentagon, white house, downing street,
congress, senate, supreme court, federal reserve, fed, ecb, github, mozilla, linux foundation, wikipedia,
red cross, greenpeace, amnesty international, unicef, unesco, fifa, uefa, ioc, nba, nfl, mlb, nhl
""")

# Common first names (English and international) for "Firstname Lastname" without a cue.
FIRST_NAMES = _names("""
james, john, robert, michael, william, david, richard, joseph, thomas, charles, christopher, daniel, matthew,
anthony, mark, donald, steven, paul, andrew, joshua, kenneth, kevin, brian, george, timothy, ronald, edward,
jason, jeffrey, ryan, jacob, gary, nicholas, eric, jonathan, stephen, larry, justin, scott, brandon,
benjamin, samuel, gregory, alexander, frank, patrick, raymond, jack, dennis, jerry, tyler, aaron, jose,
adam, nathan, henry, douglas, zachary, peter, kyle, noah, ethan, jeremy, walter, christian, keith, roger,
terry, austin, sean, gerald, carl, harold, dylan, arthur, lawrence, jordan, jesse, bryan, billy, bruce,
gabriel, joe, logan, alan, juan, albert, willie, elijah, wayne, randy, vincent, mason, roy, ralph, bobby,
russell, bradley, philip, eugene, mary, patricia, jennifer, linda, elizabeth, barbara, susan, jessica,
sarah, karen, lisa, nancy, betty, sandra, margaret, ashley, kimberly, emily, donna, michelle, carol,
amanda, melissa, deborah, stephanie, dorothy, rebecca, sharon, laura, cynthia, amy, kathleen, angela,
shirley, brenda, emma, anna, pamela, nicole, samantha, katherine, christine, helen, debra, rachel, carolyn,
janet, maria, catherine, heather, diane, olivia, julie, joyce, victoria, ruth, virginia, lauren, kelly,
christina, joan, evelyn, judith, andrea, hannah, megan, cheryl, jacqueline, martha, madison, teresa,
gloria, sara, janice, ann, kathryn, abigail, sophia, frances, jean, alice, judy, isabella, julia, grace,
amber, denise, danielle, marilyn, beverly, charlotte, natalie, theresa, diana, brittany, doris, kayla,
alexis, lori, marie, elon, sam, tim, satya, sundar, jeff, bill, bernie, kamala, joe, barack, hillary,
vladimir, volodymyr, xi, narendra, emmanuel, olaf, keir, rishi, boris, benjamin, recep, giorgia, pedro,
justin, luiz, javier, claudia, ursula, antonio, mohammed, muhammad, ahmed, ali, omar, hassan, ibrahim,
yusuf, fatima, aisha, wei, li, zhang, hiroshi, yuki, akira, raj, priya, amit, rahul, sergey, dmitry,
ivan, olga, natalia, hans, klaus, jürgen, pierre, jean, marco, giuseppe, luca, carlos, miguel, luis,
jorge, ana, sofia, lucia, francesco, lars, sven, anders, erik, jan, piotr, andrzej, mikhail, alexei,
greta, taylor, chris, alex, matt, ben, tom, nick, mike, dan, steve, rob, bob, jim, kate, liz, jen
""")

# Words before a name that make it a person: "Mr Smith", "Dr. Jones".
HONORIFICS = frozenset({"mr", "mrs", "ms", "miss", "dr", "sir", "dame", "mx"})
